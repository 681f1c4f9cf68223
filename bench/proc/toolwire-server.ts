/**
 * Bench helper: a real `ToolwireServer` on 127.0.0.1:0 with `BENCH_HOSTS` host identities and
 * `BENCH_CALLERS` caller identities (default 1 each; caller `i` is `c<i>` with token
 * `bench-caller-token-<i>`) and, when `BENCH_RECORD_DIR` is set, disk records there. The load runs
 * in this process, through `router.route()` (path `route`) or `executor.execute()` (path
 * `execute`); the door arms load it from an MCP client process instead (`mcp-client.ts`).
 */
import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { ToolwireServer } from '@toolwire/server';
import { makeInput, runSegment, type Call } from '../load.js';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';
import { callerName, callerToken, DEFAULT_HOSTS, hostName, hostToken } from './tools.js';
import { infoLogger, observing } from './observe.js';

const hostCount = Number(process.env.BENCH_HOSTS ?? DEFAULT_HOSTS);
const callerCount = Number(process.env.BENCH_CALLERS ?? 1);
const recordDir = process.env.BENCH_RECORD_DIR;
const heartbeatMs = process.env.BENCH_HEARTBEAT_MS === undefined ? undefined : Number(process.env.BENCH_HEARTBEAT_MS);
// A cluster node (bench/cluster.ts): BENCH_NATS is the NATS URL, BENCH_NODE this node's id.
const nats = process.env.BENCH_NATS;
const server = new ToolwireServer({
  hosts: Array.from({ length: hostCount }, (_, i) => ({ name: hostName(i), token: hostToken(i) })),
  callers: Array.from({ length: callerCount }, (_, i) => ({ name: callerName(i), token: callerToken(i) })),
  // Room for every bench host (s6 connects 19,000); the default cap is 1,024 connections.
  maxConnections: hostCount + 64,
  // Every bench host dials from 127.0.0.1 (as hosts behind one NAT would), up to 50 per host
  // process at once: the default 64 unauthenticated connections per address would close the
  // oldest dials of the connect storm (README, "Fleet size").
  maxPreAuthPerAddress: 1024,
  // BENCH_ADVERTISE_CACHE=0: every advertise frame decoded and examined anew (the paired arm of the advertise cache).
  ...(process.env.BENCH_ADVERTISE_CACHE === '0' ? { advertiseCacheBytes: 0 } : {}),
  ...(recordDir ? { recordDir } : {}),
  // Observability (issue 16): on only with BENCH_OBSERVE=1 (`pnpm bench --observe`), else a silent logger and no metrics.
  metrics: observing,
  ...(observing ? { logger: infoLogger() } : {}),
  ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
  ...(nats ? { cluster: { nats: [nats], name: 'bench', node: process.env.BENCH_NODE ?? 'a' } } : {}),
});
const { url, mcpUrl } = await server.listen(0, '127.0.0.1');
// One stop signal per load worker, as each concurrent agent would have its own (the executor makes
// one per call; that cost belongs to the executor, measured in s7).
const signals: AbortSignal[] = [];
const signalOf = (worker: number): AbortSignal => (signals[worker] ??= new AbortController().signal);

/**
 * The tools of this node's hosts, counted as they change (`localChanged`: a host bound, advertised or
 * left): what `waitFor` polls. `tools()` rebuilds its list of every tool after each change, which in
 * a connect storm is every advertise; a cluster node counts `tools()`, which has the other nodes' tools too.
 */
const localTools = new Map<string, number>();
let localToolCount = 0;
if (!nats) {
  server.router.on('localChanged', (host: string) => {
    const n = server.router.toolsOf(host).length;
    localToolCount += n - (localTools.get(host) ?? 0);
    if (n === 0) localTools.delete(host);
    else localTools.set(host, n);
  });
}
const toolCount = (): number => (nats ? server.router.tools().length : localToolCount);

/**
 * Wait until at least `hosts` hosts and `tools` tools are there (`exact`: exactly that many),
 * looking every `pollMs`. `hosts()` (an object per host) is only counted once the tools are there.
 */
async function waitFor(hosts: number, tools: number, timeoutMs: number, exact: boolean, pollMs = 20): Promise<void> {
  const until = Date.now() + timeoutMs;
  const done = (): boolean => {
    const t = toolCount();
    if (exact ? t !== tools : t < tools) return false;
    const h = server.router.hosts().length;
    return exact ? h === hosts : h >= hosts;
  };
  while (!done()) {
    if (Date.now() > until) {
      throw new Error(`timed out: ${server.router.hosts().length}/${hosts} hosts, ${server.router.tools().length}/${tools} tools`);
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

function makeCall(path: string, name: string, input: unknown, expect: string): Call {
  const expectedBytes = Buffer.byteLength(expect);
  if (path === 'execute') {
    return async (_, worker) => {
      const result = await server.executor.execute({ name, input, agent: 'bench', signal: signalOf(worker) });
      if (result.outcome !== 'completed') return `${result.outcome}: ${result.reason}`;
      const c = result.capture;
      if (c.exitCode !== 0 || c.stdout.length !== expectedBytes) return `exit ${c.exitCode}: ${Buffer.from(c.stderr).toString()}`;
      return undefined;
    };
  }
  return async (i, worker) => {
    const c = await server.router.route({ id: String(i), name, input, workspace: '', agent: 'bench', signal: signalOf(worker) });
    if (c === undefined) return `no such tool ${name}`;
    if (c.exitCode !== 0 || c.stdout.length !== expectedBytes) return `exit ${c.exitCode}: ${Buffer.from(c.stderr).toString().slice(0, 200)}`;
    return undefined;
  };
}

let profiler: import('node:inspector/promises').Session | undefined;

/**
 * BENCH_COMPACT_GC=1: the full GC of every RSS reading (`rss`, `mem`: s6 and cluster-scale alike)
 * compacts every old-space page; V8's own heuristics leave pages fragmented by a connect storm's
 * short-lived objects as they are. Tells that fragmentation apart from what the hosts hold.
 */
const COMPACT_GC = process.env.BENCH_COMPACT_GC === '1';

/** {@link settledRssKiB}, compacting with BENCH_COMPACT_GC=1. */
function compactedRssKiB(): number {
  if (!COMPACT_GC) return settledRssKiB();
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    return settledRssKiB();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}

serve(async (command) => {
  switch (command.cmd) {
    case 'wait':
      await waitFor(
        Number(command.hosts ?? 1),
        Number(command.tools ?? 1),
        Number(command.timeoutMs ?? 60_000),
        command.exact === true,
        Number(command.pollMs ?? 20),
      );
      return { hosts: server.router.hosts().length, tools: toolCount() };
    case 'load': {
      const input = makeInput(Number(command.bytes));
      const call = makeCall(command.path === 'execute' ? 'execute' : 'route', String(command.name), input, JSON.stringify(input));
      return { segment: await runSegment(Number(command.concurrency), Number(command.count), call, command.gc !== false) };
    }
    case 'stream': {
      // Live output (bench/live.ts): one call whose chunks are counted as they arrive.
      let streamed = 0;
      let chunks = 0;
      const start = performance.now();
      const c = await server.router.route({
        id: 'live',
        name: String(command.name),
        input: {},
        workspace: '',
        agent: 'bench',
        signal: signalOf(0),
        onOutput: (chunk) => {
          streamed += chunk.bytes.length;
          chunks++;
        },
      });
      const ms = performance.now() - start;
      if (c === undefined || c.exitCode !== 0)
        throw new Error(
          `stream: exit ${c?.exitCode}: ${Buffer.from(c?.stderr ?? [])
            .toString()
            .slice(0, 200)}`,
        );
      return { ms, streamed, chunks, captureBytes: c.stdout.length };
    }
    case 'rss':
      return { rssKiB: compactedRssKiB() };
    case 'count':
      return { hosts: server.router.hosts().length, connections: server.hostEndpoint.sessionCount };
    case 'mem': {
      // After a full GC: where the memory is (V8 heap used, external, array buffers), in KiB; and the
      // process's threads (a live decode or compile worker, each with an isolate of its own, adds one).
      const rssKiB = compactedRssKiB();
      const m = process.memoryUsage();
      const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
      // Per V8 heap space, committed and used KiB (which space holds the heap's unused committed part).
      const spaces = Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name, { sizeKiB: x.space_size / 1024, usedKiB: x.space_used_size / 1024 }]));
      return {
        rssKiB,
        heapUsedKiB: m.heapUsed / 1024,
        heapTotalKiB: m.heapTotal / 1024,
        externalKiB: m.external / 1024,
        arrayBuffersKiB: m.arrayBuffers / 1024,
        threads,
        spaces,
        compacted: COMPACT_GC,
      };
    }
    case 'heapSample': {
      // Sampling heap profile of a phase (cluster-scale's connect storm): start (`major`: keep the
      // objects a full GC collects too), then stop and write `file`.
      const { Session } = await import('node:inspector/promises');
      profiler ??= new Session();
      if (command.action === 'start') {
        profiler.connect();
        await profiler.post('HeapProfiler.enable');
        await profiler.post('HeapProfiler.startSampling', {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: command.major === true,
          includeObjectsCollectedByMinorGC: false,
        });
        return {};
      }
      const { profile } = await profiler.post('HeapProfiler.stopSampling');
      const { writeFile } = await import('node:fs/promises');
      await writeFile(String(command.file), JSON.stringify(profile));
      profiler.disconnect();
      return { file: command.file };
    }
    case 'profile': {
      // CPU profile of a phase (e.g. s6's connect storm): start, then stop and write `file`.
      const { Session } = await import('node:inspector/promises');
      profiler ??= new Session();
      if (command.action === 'start') {
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
        await profiler.post('Profiler.start');
        return {};
      }
      const { profile } = await profiler.post('Profiler.stop');
      const { writeFile } = await import('node:fs/promises');
      await writeFile(String(command.file), JSON.stringify(profile));
      profiler.disconnect();
      return { file: command.file };
    }
    case 'heapSnapshot': {
      const { writeHeapSnapshot } = await import('node:v8');
      return { file: writeHeapSnapshot(String(command.file)) };
    }
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready', url, mcpUrl });
