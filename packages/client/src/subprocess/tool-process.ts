/**
 * A running subprocess tool as its supervisor (`run-command.ts`) sees it, whether it was spawned by
 * this process ({@link launchLocal}) or by the spawn helper (`spawn-helper.ts`).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { killGroup } from './process-group.js';
import { forgetGroup, toolStarting } from './reaper.js';

/** What to run: argv, an absolute `cwd`, the whole environment, and the text written to stdin. */
export interface ToolLaunch {
  /** The call's id (its `TOOLWIRE_CALL_ID`), for the orphan reaper. */
  callId: string;
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  input: string;
  /**
   * Not started at or after this time (ms since the epoch: the call's deadline). A launch that
   * comes later — behind a stopped or backlogged spawn helper — reports `spawnFailed` with
   * {@link EXPIRED} instead: no tool ever starts after its call's deadline.
   */
  notAfter?: number;
  /**
   * Output bytes that may be read from the tool's pipes before reading stops (the call's live-output
   * window, DESIGN §5): past it both pipes are paused — the tool blocks in write(2) once they are
   * full — until {@link ToolProcess.allow} gives more. Absent: no bound.
   */
  allowance?: number;
}

/** The `code` of the `spawnFailed` error of a launch that came after its `notAfter`. */
export const EXPIRED = 'TOOLWIRE_EXPIRED';

/** The error a launch reports when it came after its `notAfter`. */
export function expiredError(): Error {
  return Object.assign(new Error('the call reached its deadline before its tool could start'), { code: EXPIRED });
}

/**
 * Where a running tool reports: `spawnFailed` (maybe before the launch function returns), or
 * `data`… and `exit` and `closed` in either order; `lost` at any time when the process that holds
 * the tool's pipes is gone (only with the spawn helper). Nothing is reported after `release()`.
 */
export interface ToolEvents {
  /** It never started: `error.code` is the spawn's errno name (ENOENT, EACCES…). */
  spawnFailed(error: Error): void;
  /** It started as process `pid` (for the host's call line, issue 16). */
  started?(pid: number): void;
  /**
   * Bytes from stdout (1) or stderr (2). `reused`: `chunk` is a view of a read buffer that is
   * reused once this returns (copy what is kept); else it is the listener's to keep.
   */
  data(fd: 1 | 2, chunk: Uint8Array, reused?: boolean): void;
  /** The tool process exited (its group may live on). */
  exit(code: number | null, signal: NodeJS.Signals | null): void;
  /** stdout and stderr are both closed (every process that held them is gone, or `release()`). */
  closed(): void;
  /** The tool's output can no longer arrive; `reason` says why. */
  lost(reason: string): void;
}

/** Control of a running tool. */
export interface ToolProcess {
  /** Signal the tool's whole process group (nothing when it is gone). */
  kill(signal: NodeJS.Signals): void;
  /** The call is over: close the tool's pipes, SIGKILL what is left of its group, report nothing more. */
  release(): void;
  /** `bytes` more output may be read (see {@link ToolLaunch.allowance}); `Infinity`: no bound from now on. */
  allow(bytes: number): void;
}

/**
 * The read bound of one tool's pipes ({@link ToolLaunch.allowance}): `read` counts what was read
 * and pauses the pipes when the allowance is used up; `allow` adds and resumes them.
 */
export class ReadAllowance {
  #left: number;
  #paused = false;
  readonly #pipes: readonly { pause(): unknown; resume(): unknown }[];

  constructor(allowance: number, pipes: readonly { pause(): unknown; resume(): unknown }[]) {
    this.#left = allowance;
    this.#pipes = pipes;
  }

  read(bytes: number): void {
    this.#left -= bytes;
    if (this.#left <= 0 && !this.#paused) {
      this.#paused = true;
      for (const p of this.#pipes) p.pause();
    }
  }

  allow(bytes: number): void {
    this.#left += bytes;
    if (this.#left > 0 && this.#paused) {
      this.#paused = false;
      for (const p of this.#pipes) p.resume();
    }
  }
}

/**
 * Spawn the tool from this process (`child_process.spawn`, `detached`, piped stdio), registered with
 * this process's orphan reaper (`reaper.ts`) from just before the spawn until `release()`.
 */
export function launchLocal(launch: ToolLaunch, events: ToolEvents): ToolProcess {
  let pid: number | undefined;
  let released = false;
  let child: ChildProcessWithoutNullStreams | undefined;
  let bound: ReadAllowance | undefined;
  let granted = 0; // allowed before the pipes existed
  const control: ToolProcess = {
    kill: (signal) => killGroup(pid, signal),
    release: () => {
      released = true;
      for (const s of [child?.stdin, child?.stdout, child?.stderr]) s?.destroy();
      killGroup(pid, 'SIGKILL');
      forgetGroup(pid);
    },
    allow: (bytes) => {
      if (bound !== undefined) bound.allow(bytes);
      else granted += bytes;
    },
  };
  if (launch.notAfter !== undefined && Date.now() >= launch.notAfter) {
    events.spawnFailed(expiredError());
    return control;
  }
  const started = toolStarting(launch.callId); // the reaper learns of the tool before it runs
  try {
    child = spawn(launch.file, launch.args, { cwd: launch.cwd, env: launch.env, shell: false, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    started(undefined);
    events.spawnFailed(error instanceof Error ? error : new Error(String(error)));
    return control;
  }
  const proc = child;
  proc.on('error', (error) => {
    // Without a pid the spawn itself failed (ENOENT, EACCES…); later errors (a failed kill) change nothing.
    if (proc.pid !== undefined || released) return;
    started(undefined);
    events.spawnFailed(error);
  });
  if (proc.pid === undefined) return control; // 'error' follows
  pid = proc.pid;
  started(pid); // killed by the reaper if this process dies before the call ends
  events.started?.(pid);
  const streams = [
    [1, proc.stdout],
    [2, proc.stderr],
  ] as const;
  let open = streams.length;
  if (launch.allowance !== undefined) bound = new ReadAllowance(launch.allowance + granted, [proc.stdout, proc.stderr]);
  const limit = bound;
  for (const [fd, stream] of streams) {
    stream.on('data', (chunk: Buffer) => {
      if (released) return;
      limit?.read(chunk.length);
      events.data(fd, chunk);
    });
    stream.on('error', () => {}); // a destroyed pipe; the capture keeps what arrived
    stream.on('close', () => {
      if (--open === 0 && !released) events.closed();
    });
  }
  proc.on('exit', (code, signal) => released || events.exit(code, signal));
  proc.stdin?.on('error', () => {}); // EPIPE: the tool did not read its input
  proc.stdin?.end(launch.input);
  return control;
}
