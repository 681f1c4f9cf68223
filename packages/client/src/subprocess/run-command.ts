/**
 * Run one subprocess tool call (DESIGN §7 "Subprocess contract"): argv run directly in its own
 * process group, the input JSON on stdin, stdout/stderr captured with a head + tail cap, SIGTERM →
 * SIGKILL to the whole group on abort, and a bounded drain after exit. The tool is spawned by the
 * process's spawn helper (`spawn-helper.ts`), or here with `spawnHelper: false`; either way an
 * orphan reaper (the helper itself, or `reaper.ts`) kills its group if the host process is killed.
 */
import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { type Capture, Defaults, failureCapture } from '@toolwire/protocol';
import { describeAbort } from '../calls/abort.js';
import { BufferedOutput, type CallOutput } from '../calls/output-sink.js';
import type { CallFacts, CommandSpec } from '../types.js';
import { signalCapture, spawnFailureCapture } from './process-group.js';
import { launchTool } from './spawn-helper.js';
import { type EnvPolicy, toolEnv } from './tool-env.js';
import { EXPIRED, type ToolEvents, type ToolLaunch, type ToolProcess } from './tool-process.js';

/** The method a call context may have to learn its subprocess tool's pid (issue 16: the host's call line). Internal. */
export const TOOL_STARTED = Symbol('toolwire.toolStarted');
/** A call context that listens for its tool's pid. */
export interface ToolStartedListener {
  [TOOL_STARTED](pid: number): void;
}

/** Options of {@link runCommandTool}. Times in ms, sizes in bytes. */
export interface RunCommandOptions {
  /** Working directory when the tool sets no `cwd`, and base of a relative `cwd`. Default `process.cwd()`. */
  root?: string;
  /** SIGTERM → SIGKILL grace after an abort. Default 2000. */
  cancelGraceMs?: number;
  /** How long output is still read after the tool exited (grandchildren may hold the pipes). Default 500. */
  drainMs?: number;
  /** Cap per stream (head half + tail half kept, marker line between). Default 8 MiB. Not used with `output`. */
  maxCaptureBytes?: number;
  /**
   * Where the tool's output goes as it is read (the call's output: streamed as `output` chunks
   * within the call's window, or buffered). The pipes are read only as far as its allowance goes:
   * past it the tool blocks in write(2) until more is allowed. The returned capture then holds only
   * what `output.take()` left for the result. Default: buffered here (head + tail, `maxCaptureBytes`),
   * the capture holds everything.
   */
  output?: CallOutput;
  /**
   * Spawn the tool from the process's spawn helper (`spawn-helper.ts`: a small `node` process, so
   * each fork is cheaper and does not stop this event loop) rather than from this process.
   * Default true; false, or a helper that cannot start, spawns here. The capture is the same.
   */
  spawnHelper?: boolean;
  /** How the tool's environment is built (`tool-env.ts`). Default: inherit, minus `TOOLWIRE_TOKEN` and `TOOLWIRE_TOKEN_FILE`. */
  env?: EnvPolicy;
  /**
   * The latest time the tool may start (ms since the epoch; the tool host passes the call's
   * deadline). A spawn that would come later (a backlogged or stopped spawn helper) does not
   * happen: the call ends 124. Default: none.
   */
  startBy?: number;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Run `spec.command` for one call and resolve with its capture. Never rejects.
 *
 * Exit code: the tool's own; `128 + n` when killed by a signal toolwire did not send; 127 when the
 * command is missing (ENOENT); 126 when it cannot be executed (EACCES…) or `cwd` is not a
 * directory; 65 for input JSON cannot encode (a BigInt, a cycle); 70 when the spawn helper died
 * during the call (with the output that had arrived); when `ctx.signal` aborts: 130 (cancel) or
 * 124 (deadline) with the partial output, at the latest `cancelGraceMs + drainMs` after the abort.
 * Each failure has a `toolwire: <reason>` line on stderr. The deadline itself is not armed here: whoever owns the call
 * aborts `ctx.signal` (the tool host does, at `ctx.deadlineMs`).
 *
 * Every timer is cleared and the whole process group is sent SIGKILL before the promise resolves,
 * so nothing outlives the call.
 */
export async function runCommandTool(spec: CommandSpec, input: unknown, ctx: CallFacts, options: RunCommandOptions = {}): Promise<Capture> {
  const argv0 = spec.command[0];
  if (argv0 === undefined) return failureCapture('host_error', 'tool has an empty command');
  const root = options.root ?? process.cwd();
  const cwd = resolvePath(root, spec.cwd ?? '.');
  // `cwd` is checked only when the spawn fails (a missing or non-directory cwd fails it): a stat per
  // call was a thread-pool round trip on every call for a check that almost never fails.
  if (ctx.signal.aborted) {
    if (!(await isDirectory(cwd))) return cwdCapture(argv0, cwd); // the cwd check still reports first
    const { failure, reason } = describeAbort(ctx.signal);
    return failureCapture(failure, reason);
  }
  let text: string;
  try {
    text = JSON.stringify(input ?? null);
  } catch (error) {
    return failureCapture('invalid_input', `input cannot be encoded as JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const launch: ToolLaunch = { callId: ctx.id, file: argv0, args: spec.command.slice(1), cwd, env: toolEnv(spec, ctx, options.env), input: text };
  if (options.startBy !== undefined) launch.notAfter = options.startBy;
  const output = options.output ?? new BufferedOutput(options.maxCaptureBytes ?? Defaults.maxCaptureBytes);
  if (output.allowance !== undefined) launch.allowance = output.allowance;
  return supervise(launch, ctx.signal, output, {
    cancelGraceMs: options.cancelGraceMs ?? Defaults.cancelGraceMs,
    drainMs: options.drainMs ?? Defaults.drainMs,
    spawnHelper: options.spawnHelper ?? true,
    started: pidListenerOf(ctx),
  });
}

/** Why a command did not start: a `cwd` that is not a directory (126) first, else the spawn error. */
async function startFailureCapture(error: unknown, argv0: string, cwd: string): Promise<Capture> {
  return (await isDirectory(cwd)) ? spawnFailureCapture(error, argv0) : cwdCapture(argv0, cwd);
}

function cwdCapture(argv0: string, cwd: string): Capture {
  return failureCapture('cannot_execute', `cannot execute ${JSON.stringify(argv0)}: cwd ${JSON.stringify(cwd)} is not a directory`);
}

type Settings = Required<Pick<RunCommandOptions, 'cancelGraceMs' | 'drainMs' | 'spawnHelper'>> & {
  /** Told the tool's pid when it starts (the host's call context), if anyone listens. */
  started: ((pid: number) => void) | undefined;
};

/**
 * Launch, feed stdin, collect output, handle abort/exit/drain; resolve exactly once. The closures
 * that live as long as the call are made in {@link watch}, which never sees `launch`: its `input`
 * (the whole input JSON) is not kept once the tool has it.
 */
function supervise(launch: ToolLaunch, signal: AbortSignal, output: CallOutput, t: Settings): Promise<Capture> {
  let resolve!: (capture: Capture) => void;
  const result = new Promise<Capture>((r) => (resolve = r));
  const watcher = watch(launch.file, launch.cwd, signal, output, t, resolve);
  const events = t.started === undefined ? watcher.events : { ...watcher.events, started: t.started };
  watcher.attach(launchTool(launch, events, t.spawnHelper));
  return result;
}

/** The events of one running tool and what they lead to; `attach` hands over the launched tool. */
function watch(
  file: string,
  cwd: string,
  signal: AbortSignal,
  output: CallOutput,
  t: Settings,
  resolve: (capture: Capture) => void,
): { events: ToolEvents; attach(proc: ToolProcess): void } {
  let proc: ToolProcess | undefined;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let closed = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let drainTimer: NodeJS.Timeout | undefined;
  /** The tool exited while its pipes were held by the window: the drain starts when credit comes. */
  let drainHeld = false;
  let done = false;

  const finish = (end?: { spawnError?: NodeJS.ErrnoException; lost?: string }): void => {
    if (done) return;
    done = true;
    clearTimeout(graceTimer);
    clearTimeout(drainTimer);
    signal.removeEventListener('abort', onAbort);
    proc?.release(); // closes the pipes and SIGKILLs leftovers of the group (backgrounded grandchildren)
    const spawnError = end?.spawnError;
    if (spawnError?.code === EXPIRED) {
      // Never started: the abort's capture when the deadline timer came first, else the deadline's.
      const { failure, reason } = signal.aborted ? describeAbort(signal) : { failure: 'deadline' as const, reason: spawnError.message };
      resolve(failureCapture(failure, reason));
      return;
    }
    if (spawnError !== undefined) {
      void startFailureCapture(spawnError, file, cwd).then(resolve);
      return;
    }
    const { stdout, stderr } = output.take(); // what was not streamed (all of it, buffered)
    if (signal.aborted) {
      const { failure, reason } = describeAbort(signal);
      resolve(failureCapture(failure, reason, { stdout, stderr: output.beforeReason(stderr) }));
    } else if (end?.lost !== undefined) {
      resolve(failureCapture('host_error', end.lost, { stdout, stderr: output.beforeReason(stderr) }));
    } else if (exit?.signal) {
      resolve(signalCapture(exit.signal, stdout, output.beforeReason(stderr)));
    } else {
      resolve({ stdout, stderr, exitCode: exit?.code ?? 0 });
    }
  };

  // After the tool exited, output is still read for drainMs (grandchildren may hold the pipes);
  // time the pipes are held by the window does not count: what the tool wrote is not cut off
  // because the caller reads slowly (the call's deadline still bounds it).
  const drained = (): void => {
    drainTimer = undefined;
    if (output.held) drainHeld = true;
    else finish();
  };
  const startDrain = (): void => {
    if (output.held) drainHeld = true;
    else drainTimer = setTimeout(drained, t.drainMs);
  };
  const gate = {
    allow: (bytes: number): void => {
      proc?.allow(bytes);
      if (drainHeld && !output.held && !done) {
        drainHeld = false;
        drainTimer = setTimeout(drained, t.drainMs);
      }
    },
  };

  const onAbort = (): void => {
    output.end(); // nothing waits for credit any more: the pipes are read freely (gate.allow)
    if (done || exit) return; // exited: the drain is bounded by drainMs, then the group gets SIGKILL
    proc?.kill('SIGTERM');
    graceTimer ??= setTimeout(() => {
      proc?.kill('SIGKILL');
      // Its end is not reported within drainMs (a stopped spawn helper): the call ends anyway.
      graceTimer = setTimeout(finish, t.drainMs);
    }, t.cancelGraceMs);
  };

  const events: ToolEvents = {
    spawnFailed: (error) => finish({ spawnError: error }),
    data: (fd, chunk, reused) => {
      if (reused) output.copy(fd === 1 ? 'stdout' : 'stderr', chunk);
      else void output.write(fd === 1 ? 'stdout' : 'stderr', chunk);
    },
    exit: (code, sig) => {
      exit = { code, signal: sig };
      clearTimeout(graceTimer);
      if (closed) finish();
      else startDrain();
    },
    closed: () => {
      closed = true;
      if (exit) finish();
    },
    lost: (reason) => finish({ lost: reason }),
  };
  const attach = (launched: ToolProcess): void => {
    proc = launched;
    if (done)
      launched.release(); // it failed while launching, before `proc` was set
    else {
      output.gate(gate);
      signal.addEventListener('abort', onAbort, { once: true });
    }
  };
  return { events, attach };
}

/** The tool-started listener of a call context that has one (the tool host's, {@link TOOL_STARTED}). */
function pidListenerOf(ctx: CallFacts): ((pid: number) => void) | undefined {
  const listener = (ctx as Partial<ToolStartedListener>)[TOOL_STARTED];
  return typeof listener === 'function' ? listener.bind(ctx) : undefined;
}
