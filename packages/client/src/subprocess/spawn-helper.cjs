/**
 * The spawn helper of a tool host (`spawn-helper.ts` starts it; plain CommonJS so it runs on bare
 * `node`, without tsx or anything else the host loaded).
 *
 * Why it exists: `fork()` copies the page tables of the process that spawns, and the parent then
 * takes a copy-on-write fault for every page it touches afterwards. A tool host (ws, ajv, pino, a
 * TypeScript loader) is much bigger than this process, and its event loop would stop for
 * each fork; from here neither happens (figures in bench/README.md items 16–17).
 *
 * Protocol (Node IPC, `serialization: 'advanced'`; the helper sends arrays of events, see `flush`):
 * - host → helper: `{op:'spawn', id, file, args, cwd, env, input, umask, notAfter?, allowance?}` (not spawned at or
 *   after `notAfter`, ms since the epoch: answered `{ev:'error', code:'TOOLWIRE_EXPIRED'}`; `allowance`: output
 *   bytes read from its pipes before they are paused, the call's live-output window); `{op:'allow', id, bytes}`
 *   (that many more may be read; `Infinity`: no bound); `{op:'kill', id, signal}`
 *   (signal the tool's process group); `{op:'release', id}` (the call is over: close its pipes,
 *   SIGKILL what is left of its group, forget it).
 * - helper → host, per id, in this order: `{ev:'spawn', id, pid}` or `{ev:'error', id, code, message}`;
 *   then `{ev:'data', id, fd, chunk}`…, `{ev:'exit', id, code, signal}`, `{ev:'closed', id}` (stdout
 *   and stderr both closed; `exit` and `closed` may come in either order). When both have come the
 *   helper has already SIGKILLed what was left of the group and forgotten the tool: the host sends
 *   no `release` then. Nothing after `release`.
 *
 * - helper → host, once a tool has output HANDOVER_BYTES: `{ev:'pipe', id, fd}` with the handle of its
 *   stdout (fd 1), then its stderr (fd 2) (each the bare pipe handle, `sendHandle`), after every `data` event read here: from then on the host
 *   reads the pipes itself (one process and one copy fewer for a big output), counts the tool's
 *   allowance, and sees the pipes close; this helper sends no `data` or `closed` for it any more,
 *   and the host always sends `release` at the end.
 *
 * Tools are spawned `detached` (their own process group). When the IPC channel closes — the host
 * process ended, however — every group still known is sent SIGKILL and the helper exits. Output is
 * paused while more than HIGH_WATER bytes wait to be written to the channel (backpressure), and a
 * tool's pipes while its allowance is used up (the call's window: the host's memory per streaming
 * call stays bounded without a round trip). A streaming tool's output (one with an allowance) goes
 * out at the end of the loop turn that read it, not within BATCH_MS: the caller watches it live, and
 * a timer would cost this process one more wake-up (one more wait for a CPU) per chunk.
 */
'use strict';
const { spawn } = require('node:child_process');

const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/** Output bytes that make a batch go at once. */
const BATCH_BYTES = 64 * 1024;
/** The longest an event waits for its batch (ms). */
const BATCH_MS = 10;
/**
 * Output bytes of one tool after which its pipes are handed to the host (both still open): a short
 * tool's output rides in one batch with its exit, a big one skips this process.
 */
const HANDOVER_BYTES = 256 * 1024;

/**
 * id → { child, pid, allowance, read, passed } of every tool not yet released (`allowance`: bytes it may still
 * output, or undefined; `read`: bytes read here; `passed`: its pipes were handed to the host).
 */
const tools = new Map();
/** Bytes handed to the channel and not yet written. */
let queued = 0;
let paused = false;
/**
 * Events not sent yet, sent as one message (an array) by `flush`: at the end of the loop turn in
 * which a tool started or finished (exit and pipes closed) or BATCH_BYTES of output gathered, else
 * after BATCH_MS. A short call costs the host two wake-ups instead of four (spawn; data, exit, closed).
 */
let batch = [];
let batchBytes = 0;
let flushTimer;
let flushNow = false;

function killGroup(pid, signal) {
  if (!(pid > 0)) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: gone already.
  }
}

/** Whether a tool's pipes may be read: the channel is not backed up and its allowance is not used up. */
function readable(entry) {
  return !paused && !(entry.allowance <= 0);
}

function pipes(entry, read) {
  if (entry.passed) return; // the host reads them
  for (const s of [entry.child.stdout, entry.child.stderr]) if (s) read ? s.resume() : s.pause();
}

function sent(bytes) {
  return () => {
    queued -= bytes;
    if (paused && queued <= LOW_WATER) {
      paused = false;
      for (const entry of tools.values()) if (readable(entry)) pipes(entry, true);
    }
  };
}

function flush() {
  clearTimeout(flushTimer);
  flushTimer = undefined;
  flushNow = false;
  if (batch.length === 0) return;
  const events = batch;
  const bytes = batchBytes;
  batch = [];
  batchBytes = 0;
  if (!process.connected) return;
  queued += bytes;
  process.send(events, undefined, undefined, sent(bytes));
  if (!paused && queued > HIGH_WATER) {
    paused = true;
    for (const entry of tools.values()) pipes(entry, false);
  }
}

/** Queue `event`; `urgent`: send the batch at the end of this loop turn. */
function send(event, bytes = 0, urgent = false) {
  batch.push(event);
  batchBytes += bytes;
  if (!flushNow && (urgent || batchBytes >= BATCH_BYTES)) {
    flushNow = true;
    setImmediate(flush);
  } else if (flushTimer === undefined && !flushNow) {
    flushTimer = setTimeout(flush, BATCH_MS);
  }
}

function start({ id, file, args, cwd, env, input, umask, notAfter, allowance }) {
  if (notAfter !== undefined && Date.now() >= notAfter) {
    // Its call's deadline passed while the spawn waited here (a backlog, or this process was stopped): never start it.
    send({ ev: 'error', id, code: 'TOOLWIRE_EXPIRED', message: 'the call reached its deadline before its tool could start' }, 0, true);
    return;
  }
  let child;
  const ownMask = process.umask(umask); // the host's umask for this spawn (inherited by the child)
  try {
    child = spawn(file, args, { cwd, env, shell: false, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    process.umask(ownMask);
    send({ ev: 'error', id, code: error && error.code, message: String(error && error.message) }, 0, true);
    return;
  }
  process.umask(ownMask);
  const entry = { child, pid: child.pid, allowance, read: 0, passed: false };
  const streaming = allowance !== undefined;
  tools.set(id, entry);
  const live = () => tools.get(id) === entry;
  child.on('error', (error) => {
    // Without a pid the spawn itself failed (ENOENT, EACCES…); later errors (a failed kill) change nothing.
    if (child.pid !== undefined || !live()) return;
    tools.delete(id);
    send({ ev: 'error', id, code: error.code, message: error.message }, 0, true);
  });
  if (child.pid === undefined) return; // 'error' follows
  send({ ev: 'spawn', id, pid: child.pid }, 0, true); // at once: the host kills the group if this helper dies
  let open = 2;
  let exited = false;
  // Exit seen and both pipes closed: the call is over here. Leftovers of the group (members that
  // closed their stdio) get SIGKILL now, before the host hears of the end, and the host sends no
  // `release` for it.
  const over = () => {
    tools.delete(id);
    killGroup(entry.pid, 'SIGKILL');
  };
  for (const [fd, stream] of [
    [1, child.stdout],
    [2, child.stderr],
  ]) {
    if (!readable(entry)) stream.pause();
    stream.on('data', (chunk) => {
      if (!live() || entry.passed) return;
      send({ ev: 'data', id, fd, chunk }, chunk.length, streaming);
      if (streaming) {
        entry.allowance -= chunk.length;
        if (entry.allowance <= 0) pipes(entry, false);
      }
      entry.read += chunk.length;
      if (entry.read >= HANDOVER_BYTES && open === 2 && !entry.handing) handOver(id, entry);
    });
    stream.on('error', () => {});
    stream.on('close', () => {
      if (entry.passed || --open !== 0 || !live()) return;
      send({ ev: 'closed', id }, 0, exited);
      if (exited) over();
    });
  }
  child.on('exit', (code, signal) => {
    exited = true;
    if (!live()) return;
    send({ ev: 'exit', id, code, signal }, 0, open === 0 || entry.passed);
    if (open === 0 && !entry.passed) over();
  });
  child.stdin.on('error', () => {}); // EPIPE: the tool did not read its input
  child.stdin.end(input);
}

/**
 * Hand a tool's two pipes to the host: stop reading them here, send what was read (in order), then
 * each pipe's handle; this process's copy of each is closed once its handle is sent.
 */
function handOver(id, entry) {
  const streams = [
    [1, entry.child.stdout],
    [2, entry.child.stderr],
  ];
  if (!process.connected || streams.some(([, s]) => !s || s.destroyed || !s._handle)) return;
  entry.handing = true;
  for (const [, s] of streams) {
    s.pause();
    s._handle.readStop();
    s._handle.reading = true; // keeps net.Socket#_read from reading again (read() below, a later resume)
    while (s.read() !== null); // what it had buffered goes out through the 'data' listener
  }
  entry.passed = true;
  flush(); // the data read here goes before the handles
  // Sent as the bare pipe handle (the host makes its own net.Socket of it, reading into a buffer it
  // reuses); this process's copy is closed once the handle is sent.
  for (const [fd, s] of streams) process.send({ ev: 'pipe', id, fd }, s._handle, undefined, () => s.destroy());
}

function allow(id, bytes) {
  const entry = tools.get(id);
  if (entry === undefined || entry.allowance === undefined || entry.passed) return;
  const was = readable(entry);
  entry.allowance += bytes;
  if (!was && readable(entry)) pipes(entry, true);
}

function release(id) {
  const entry = tools.get(id);
  if (entry === undefined) return;
  tools.delete(id);
  const { child } = entry;
  for (const s of [child.stdin, child.stdout, child.stderr]) s && s.destroy();
  killGroup(entry.pid, 'SIGKILL');
}

process.on('message', (m) => {
  if (m === null || typeof m !== 'object') return;
  if (m.op === 'spawn') start(m);
  else if (m.op === 'allow') allow(m.id, m.bytes);
  else if (m.op === 'kill') killGroup(tools.get(m.id)?.pid, m.signal);
  else if (m.op === 'release') release(m.id);
});

process.on('disconnect', () => {
  for (const { pid } of tools.values()) killGroup(pid, 'SIGKILL');
  process.exit(0);
});
