[
  {
    "name": "host socket closes > a host process killed mid-call settles its calls 69 at once and its tools leave tools()",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "host goes silent (half-open) > a stopped host process is terminated by the heartbeat and its calls settle 69 within 2 intervals",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > an unparsable frame closes 1002 and settles pending calls 76",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > invalid UTF-8 in a text frame closes 1007 and settles pending calls 76",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > a binary frame closes 1003 and settles pending calls 76",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > a frame over maxPayload closes 1009 and settles pending calls 76",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > a wrong-shape frame naming a known call settles that call 76 and keeps the session",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "bad frames > a result for an unknown id is dropped and the session kept",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "deadline > settles 124 at the deadline, sends cancel, and drops the late result",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "stop > sends cancel and settles 130 with the partial output the host returns",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "stop > settles 130 within the cancel grace when the host never answers",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "stop > kills the tool process tree on the host, grandchildren included",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "same host connects again > closes the old session 4000, settles its calls 69, never replays, and keeps the new session",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "overload > a host at its in-flight limit gets new calls settled 75 at once",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "advertising > rejects an invalid tool with a reason and accepts the rest",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "advertising > refuses an upgrade without a valid host token with HTTP 401",
    "file": "/work/wt-i18-close/test/faults.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/protocol",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/protocol/constants: the tables alone, a subset of the root",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/server",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/client",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/cli",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > @toolwire/testing",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "public API: the names each package root exports > test seams are not public options (checked by tsc: newCallId is not a ToolwireServerOptions key)",
    "file": "/work/wt-i18-close/test/public-api.test.ts"
  },
  {
    "name": "slow consumer > new calls settle 75 once the host’s buffered bytes pass the limit; memory stays bounded; other hosts are unaffected",
    "file": "/work/wt-i18-close/test/adversarial/slow-consumer.test.ts"
  },
  {
    "name": "a host re-advertises without a tool while a call to it is in flight > (qualified) the call completes on the host it was sent to and is never rerouted; new calls follow the new tool set",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "a host re-advertises without a tool while a call to it is in flight > (bare) the call completes on the host it was sent to and is never rerouted; new calls follow the new tool set",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "a host re-advertises without a tool while a call to it is in flight > a call to a withdrawn tool that the host never answers still settles cleanly: 124 at its deadline, 130 on stop",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "two hosts advertising the same name > qualified naming (default): both are exposed under their own host prefix",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "two hosts advertising the same name > bare naming: the first host keeps the name, the later one gets it in advertised.rejected; it is not handed over when the first leaves",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "two hosts advertising the same name > qualified naming: host names that collide through \"_\" (a_ + __ + b = a + __ + _b) follow the same first-keeps rule",
    "file": "/work/wt-i18-close/test/adversarial/toolset.test.ts"
  },
  {
    "name": "stop kills the whole process group > a tree whose grandchild holds stdout: the capture (130, partial output kept) arrives within the cancel grace + 500 ms, and no process of it outlives that",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "stop kills the whole process group > a tree that ignores SIGTERM: the capture (130, partial output kept) arrives within the cancel grace + 500 ms, and no process of it outlives that",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "a deadline kills the whole process group > tree: the call settles 124 at the deadline, and no process of it outlives the deadline + grace + 500 ms",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "a deadline kills the whole process group > stubborn: the call settles 124 at the deadline, and no process of it outlives the deadline + grace + 500 ms",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "a tool that exits while its grandchild holds stdout > answers within the drain bound and the grandchild is killed",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "documented limit: a child that escapes its process group with setsid > is not reached by the group kill (README \"Failure semantics\"); the rest of the tree is",
    "file": "/work/wt-i18-close/test/adversarial/trees.test.ts"
  },
  {
    "name": "@toolwire/testing README examples > shows each example file exactly as it is",
    "file": "/work/wt-i18-close/packages/testing/test/docs.test.ts"
  },
  {
    "name": "@toolwire/testing README examples > the node:test example passes under node --test",
    "file": "/work/wt-i18-close/packages/testing/test/docs.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > blackhole(): the silent host is cut by the heartbeat and its call settles 69 within the bound",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > latency past the deadline: the call settles 124 with the deadline in its reason",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > bandwidth throttling past the buffered limit: new calls settle 75 at once",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > reset(): the connection is cut with an RST, the call settles 69 at once, and the host comes back",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > disconnect() settles the call in flight 69; reconnect() brings the tools back",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "fault proxy between a real host and a real server > closeAfter(bytes): the connection ends once the budget is spent and the call settles 69",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "child-process hosts > kill(): a SIGKILLed host process settles its call 69 at once and leaves tools()",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "child-process hosts > pause(): a SIGSTOPped host is cut by the heartbeat (69); resume() and it advertises again",
    "file": "/work/wt-i18-close/packages/testing/test/faults.test.ts"
  },
  {
    "name": "netns mode: detection > netnsSupport() says whether the mode can run here, and why not",
    "file": "/work/wt-i18-close/packages/testing/test/netns.test.ts"
  },
  {
    "name": "netns mode: detection > {netns: true} without {process: true} is refused at once",
    "file": "/work/wt-i18-close/packages/testing/test/netns.test.ts"
  },
  {
    "name": "netns mode: a host blackholed at the kernel > a kernel blackhole cuts the silent host by the heartbeat: its call settles 69 within the bound; heal() brings it back; close() leaves nothing",
    "file": "/work/wt-i18-close/packages/testing/test/netns.test.ts"
  },
  {
    "name": "netns mode: a host blackholed at the kernel > a test runner that exits without closing leaves no namespace, veth or host process; stale ones of dead runners are swept",
    "file": "/work/wt-i18-close/packages/testing/test/netns.test.ts"
  },
  {
    "name": "FaultProxy > passes bytes both ways unchanged when healthy",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > latency holds every chunk at least the given time, in order",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > bandwidth paces the bytes: 4 KiB at 8 KiB/s each way takes at least ~0.4 s",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > blackhole swallows bytes and passes no FIN; heal lets new bytes through again",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > reset sends an RST to the client",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > closeAfter(bytes) lets that many bytes through, then FINs",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > slowClose delays the FIN by the given time while bytes still flow",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > a fault on one connection leaves the others alone",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > refuse resets new connections until heal",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "FaultProxy > caller misuse throws at once",
    "file": "/work/wt-i18-close/packages/testing/test/proxy.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > garbage: the session is closed 1002 and the call settles 76",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > invalid-utf8: the session is closed 1007 and the call settles 76",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > binary: the session is closed 1003 and the call settles 76",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > oversize: the session is closed 1009 and the call settles 76",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > wrong-shape: that call settles 76 with the schema error and the session is kept",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > unknown-id: the stray result is dropped and the real answer is the capture",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > duplicate: the first result wins and the second is dropped",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > late-after-cancel: the deadline capture (124) stands, the late result is dropped, the session kept",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  },
  {
    "name": "a rogue host: each frame kind gives its documented capture > a script of callbacks: answers the first call, then garbage",
    "file": "/work/wt-i18-close/packages/testing/test/rogue.test.ts"
  }
]