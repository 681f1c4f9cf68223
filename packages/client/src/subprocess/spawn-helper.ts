/**
 * The tool host's spawn helper: one small `node` process (`spawn-helper.cjs`, no tsx, no host code)
 * that spawns subprocess tools on the host's behalf and forwards their output over Node IPC.
 *
 * `fork()` cost grows with the spawning process (page tables copied, then a copy-on-write fault per
 * page the parent touches), and `spawn()` blocks the event loop until the child has exec'd. Forking
 * from a small process instead costs less wall time and much less of the host's CPU per call
 * (bench/README.md items 16–20).
 *
 * One helper per process, started with the first subprocess tool, never keeping the process alive
 * while idle. If it cannot start (no usable `process.execPath`, Windows) tools are spawned locally
 * ({@link launchLocal}); nothing else changes. Output arrives in batches (at a tool's end, every
 * 64 KiB, else within 10 ms); once a tool has output 256 KiB the helper hands its two pipes over
 * and they are read here (`helper-pipes.ts`: one process and one copy fewer per byte; the read bound
 * of its live-output window is then kept here). If the helper dies, the calls it carried end as
 * `lost` (exit code 70, the reason on stderr, the output that had arrived) with their groups killed
 * from here, and the next call starts a new one. It kills its tools and exits when its IPC channel
 * closes — this process ended, however (SIGKILL included). Every tool it spawns is also registered
 * with this process's orphan reaper (`reaper.ts`, as tools spawned here are), which does not depend
 * on the helper: when this process and the helper are killed together, the reaper kills the tools.
 * Tools get the environment this process builds per call (`tool-env.ts`: never the host's
 * credentials) and its umask; other process attributes changed after the helper started (nice
 * value, rlimits) do not reach them.
 * Limit: a helper killed in the instant between a fork and its report of the pid leaves that one
 * tool running until it ends by itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Passed, type PipeEvent, readPassedPipe } from './helper-pipes.js';
import { killGroup } from './process-group.js';
import { forgetGroup, toolStarting } from './reaper.js';
import { withoutCredentials } from './tool-env.js';
import { type ToolEvents, type ToolLaunch, type ToolProcess, launchLocal } from './tool-process.js';

const PROGRAM = fileURLToPath(new URL('./spawn-helper.cjs', import.meta.url));

/**
 * Node flags of the helper: a 1 MiB young generation and one V8 worker thread keep the process
 * (and so each fork's page-table copy) small (bench/README.md item 17).
 */
const HELPER_NODE_FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1'];

/** A message from the helper (see `spawn-helper.cjs`). */
type HelperEvent =
  | { ev: 'spawn'; id: number; pid: number }
  | { ev: 'error'; id: number; code?: string; message: string }
  | { ev: 'data'; id: number; fd: 1 | 2; chunk: Uint8Array }
  | { ev: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { ev: 'closed'; id: number };

interface Remote {
  /** Kept for a relaunch here until the helper answers about it (then dropped: it holds the whole input). */
  launch: ToolLaunch | undefined;
  events: ToolEvents;
  /** Tells the orphan reaper the tool's group once the helper reported it (or that it never started). */
  register?: ((pid: number | undefined) => void) | undefined;
  /** The tool's process group, once the helper reported it. */
  pid?: number;
  /** Set when the helper never started: the call was handed to {@link launchLocal}. */
  local?: ToolProcess;
  exited?: boolean;
  closed?: boolean;
  /** Output bytes the tool may still output (its allowance less what arrived), `undefined`: no bound. */
  left: number | undefined;
  /** Its pipes, once the helper handed them over. */
  passed?: Passed;
}

/** Spawn errors of the helper itself that will not go away by trying again. */
const PERMANENT = new Set(['ENOENT', 'EACCES', 'EPERM', 'ENOEXEC']);

/** One running helper process and the calls it carries. */
class Helper {
  readonly #child: ChildProcess;
  readonly #calls = new Map<number, Remote>();
  #nextId = 0;
  #answered = false;
  #gone = false;

  constructor(child: ChildProcess) {
    this.#child = child;
    child.on('message', (events: HelperEvent[] | PipeEvent, pipe?: object) => {
      if (Array.isArray(events)) for (const m of events) this.#onEvent(m);
      // A `pipe` without its handle: the helper released the call before the handle went (nothing to read).
      else if (pipe !== undefined) this.#onPipe(events, pipe);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      // Without a pid the helper never started: nothing of its calls ran, they run here instead.
      if (child.pid === undefined) this.#end(`spawn helper failed: ${error.message}`, { relaunch: true, permanent: PERMANENT.has(error.code ?? '') });
      else this.#end(`spawn helper failed: ${error.message}`);
    });
    child.on('exit', (code, signal) => this.#end(`spawn helper exited (${signal ?? `code ${code}`})`));
    this.#idle();
  }

  get gone(): boolean {
    return this.#gone;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  launch(launch: ToolLaunch, events: ToolEvents): ToolProcess {
    const id = ++this.#nextId;
    // The reaper learns of the tool before the helper forks it: if this process and the helper die
    // together, the reaper still kills its group (or finds it by its call id, on Linux).
    const remote: Remote = { launch, events, register: toolStarting(launch.callId), left: launch.allowance };
    this.#calls.set(id, remote);
    if (this.#calls.size === 1) this.#busy();
    this.#send({ op: 'spawn', id, umask: process.umask(), ...launch }); // this process's umask now, as a local spawn would
    return {
      allow: (bytes) => {
        if (remote.local) return remote.local.allow(bytes);
        if (remote.left !== undefined) {
          const was = remote.left;
          remote.left += bytes;
          if (remote.passed !== undefined) {
            if (was <= 0 && remote.left > 0) for (const s of remote.passed.sockets) s.resume();
            return;
          }
        }
        // Kept with the launch too: if the helper never started, the call is relaunched here with it.
        if (remote.launch?.allowance !== undefined) remote.launch.allowance += bytes;
        if (this.#calls.has(id)) this.#send({ op: 'allow', id, bytes });
      },
      kill: (signal) => {
        if (remote.local) remote.local.kill(signal);
        else if (remote.pid !== undefined) killGroup(remote.pid, signal);
        else this.#send({ op: 'kill', id, signal });
      },
      release: () => {
        if (remote.local) return remote.local.release();
        if (!this.#forget(id)) return;
        if (remote.passed !== undefined || !(remote.exited && remote.closed)) {
          // Not over yet, or its pipes were read here (else the helper killed the rest of the group before it said so).
          this.#send({ op: 'release', id });
          killGroup(remote.pid, 'SIGKILL');
        }
        forgetGroup(remote.pid);
        remote.register?.(undefined); // released before its pid came: the helper kills it at `release`
        remote.register = undefined;
      },
    };
  }

  /**
   * In-flight calls keep the process alive: the helper process and its channel are ref'd, so its
   * exit is seen (and the calls end) even when nothing else holds the event loop.
   */
  #busy(): void {
    this.#child.ref();
    this.#child.channel?.ref();
  }

  #idle(): void {
    this.#child.unref();
    this.#child.channel?.unref();
  }

  #send(message: object): void {
    if (this.#gone || !this.#child.connected) return;
    this.#child.send(message, (error) => {
      if (error) this.#end(`spawn helper unreachable: ${error.message}`);
    });
  }

  #forget(id: number): boolean {
    const remote = this.#calls.get(id);
    if (remote === undefined) return false;
    this.#calls.delete(id);
    for (const s of remote.passed?.sockets ?? []) s.destroy();
    if (this.#calls.size === 0) this.#idle();
    return true;
  }

  #onEvent(m: HelperEvent): void {
    this.#answered = true;
    const remote = this.#calls.get(m.id);
    if (remote === undefined) return; // released meanwhile
    remote.launch = undefined; // the helper has it: never relaunched here
    switch (m.ev) {
      case 'spawn':
        remote.pid = m.pid;
        remote.register?.(m.pid);
        remote.register = undefined;
        remote.events.started?.(m.pid);
        return;
      case 'error': {
        this.#forget(m.id);
        remote.register?.(undefined);
        remote.register = undefined;
        remote.events.spawnFailed(Object.assign(new Error(m.message), { code: m.code }));
        return;
      }
      case 'data':
        if (remote.left !== undefined) remote.left -= m.chunk.byteLength;
        // A copy when the chunk is a small view into the channel's read buffer: the capture may
        // keep it, and a view would keep the whole buffer (every tool's output of that read) alive.
        remote.events.data(m.fd, m.chunk.byteLength * 2 < m.chunk.buffer.byteLength ? new Uint8Array(m.chunk) : m.chunk);
        return;
      case 'exit':
        remote.exited = true;
        remote.events.exit(m.code, m.signal);
        return;
      case 'closed':
        remote.closed = true;
        remote.events.closed();
        return;
    }
  }

  /** One pipe of a tool handed over by the helper: read here from now on ({@link readPassedPipe}). */
  #onPipe(m: PipeEvent, handle: object): void {
    const remote = this.#calls.get(m.id);
    readPassedPipe(m, handle, remote, () => this.#calls.get(m.id) === remote);
  }

  /**
   * The helper is gone. `relaunch` (it never started, so none of its calls ran): its calls are
   * spawned here. Else every call it carried is lost and its group killed from here. `permanent`,
   * or a helper that died before it ever answered: no helper is started again in this process.
   */
  #end(reason: string, how: { relaunch?: boolean; permanent?: boolean } = {}): void {
    if (this.#gone) return;
    this.#gone = true;
    if (current === this) current = undefined;
    if (how.permanent || (!how.relaunch && !this.#answered)) disabled = true;
    if (this.#child.connected) this.#child.disconnect();
    this.#idle();
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const remote of calls) for (const s of remote.passed?.sockets ?? []) s.destroy();
    for (const remote of calls) {
      if (how.relaunch && remote.launch !== undefined) {
        remote.register?.(undefined); // launchLocal registers it again
        remote.local = launchLocal(remote.launch, remote.events);
      } else {
        // A tool whose pid never came stays announced to the reaper by its call id (found when this process ends).
        killGroup(remote.pid, 'SIGKILL');
        forgetGroup(remote.pid);
        remote.events.lost(reason);
      }
    }
  }
}

let current: Helper | undefined;
let disabled = process.platform === 'win32';

function helper(): Helper | undefined {
  if (disabled) return undefined;
  if (current !== undefined && !current.gone) return current;
  const env = withoutCredentials(process.env); // the helper needs no credentials; its tools get theirs per call
  delete env.NODE_OPTIONS; // a bare node: no loader, no preloads
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [...HELPER_NODE_FLAGS, PROGRAM], {
      env,
      detached: true, // its own group: a terminal's Ctrl-C reaches the host, which ends the calls itself
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
  } catch {
    disabled = true;
    return undefined;
  }
  current = new Helper(child);
  return current;
}

/**
 * Launch a tool through the spawn helper when `useHelper` is true and the helper is available, else
 * from this process. See {@link ToolEvents} for what is reported.
 */
export function launchTool(launch: ToolLaunch, events: ToolEvents, useHelper: boolean): ToolProcess {
  const h = useHelper ? helper() : undefined;
  return h === undefined ? launchLocal(launch, events) : h.launch(launch, events);
}

/** Test seam: the pid of the running helper, if any. */
export function spawnHelperPid(): number | undefined {
  return current?.gone === false ? current.pid : undefined;
}
