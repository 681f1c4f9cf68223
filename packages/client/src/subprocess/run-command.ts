/**
 * Run one subprocess tool call (DESIGN §7 "Subprocess contract"): argv run directly in its own
 * process group, the input JSON on stdin, stdout/stderr captured with a head + tail cap, SIGTERM →
 * SIGKILL to the whole group on abort, and a bounded drain after exit. The group is registered with
 * the process's orphan reaper (`reaper.ts`) while it runs, so it dies even if the host is killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { Readable } from 'node:stream';
import { type Capture, Defaults, HeadTailBuffer, failureCapture } from '@toolwire/protocol';
import { describeAbort } from '../calls/abort.js';
import { headTailSplit } from '../calls/capture-cap.js';
import type { CommandSpec, ToolContext } from '../types.js';
import { killGroup, signalCapture, spawnFailureCapture } from './process-group.js';
import { forgetGroup, toolStarting } from './reaper.js';

/** Options of {@link runCommandTool}. Times in ms, sizes in bytes. */
export interface RunCommandOptions {
  /** Working directory when the tool sets no `cwd`, and base of a relative `cwd`. Default `process.cwd()`. */
  root?: string;
  /** SIGTERM → SIGKILL grace after an abort. Default 2000. */
  cancelGraceMs?: number;
  /** How long output is still read after the tool exited (grandchildren may hold the pipes). Default 500. */
  drainMs?: number;
  /** Cap per stream (head half + tail half kept, marker line between). Default 8 MiB. */
  maxCaptureBytes?: number;
}

/** The environment of a tool process: inherited + the tool's `env` + the `TOOLWIRE_*` call facts. */
export function toolEnv(spec: CommandSpec, ctx: ToolContext, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    ...spec.env,
    TOOLWIRE_CALL_ID: ctx.id,
    TOOLWIRE_AGENT: ctx.agent,
    TOOLWIRE_WORKSPACE: ctx.workspace,
    TOOLWIRE_DEADLINE_MS: String(ctx.deadlineMs),
  };
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
 * directory; when `ctx.signal` aborts: 130 (cancel) or 124 (deadline) with the partial output and a
 * `toolwire: <reason>` line on stderr. The deadline itself is not armed here: whoever owns the call
 * aborts `ctx.signal` (the tool host does, at `ctx.deadlineMs`).
 *
 * Every timer is cleared and the whole process group is sent SIGKILL before the promise resolves,
 * so nothing outlives the call.
 */
export async function runCommandTool(
  spec: CommandSpec,
  input: unknown,
  ctx: ToolContext,
  options: RunCommandOptions = {},
): Promise<Capture> {
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
  const started = toolStarting(ctx.id); // the host's orphan reaper learns of it before it runs
  let child: ChildProcess;
  try {
    child = spawn(argv0, spec.command.slice(1), {
      cwd,
      env: toolEnv(spec, ctx),
      shell: false,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    started(undefined);
    return startFailureCapture(error, argv0, cwd);
  }
  started(child.pid); // killed by the reaper if this host process dies before the call ends
  return supervise(child, argv0, cwd, input, ctx.signal, {
    cancelGraceMs: options.cancelGraceMs ?? Defaults.cancelGraceMs,
    drainMs: options.drainMs ?? Defaults.drainMs,
    maxCaptureBytes: options.maxCaptureBytes ?? Defaults.maxCaptureBytes,
  });
}

/** Why a command did not start: a `cwd` that is not a directory (126) first, else the spawn error. */
async function startFailureCapture(error: unknown, argv0: string, cwd: string): Promise<Capture> {
  return (await isDirectory(cwd)) ? spawnFailureCapture(error, argv0) : cwdCapture(argv0, cwd);
}

function cwdCapture(argv0: string, cwd: string): Capture {
  return failureCapture('cannot_execute', `cannot execute ${JSON.stringify(argv0)}: cwd ${JSON.stringify(cwd)} is not a directory`);
}

type Timings = Required<Pick<RunCommandOptions, 'cancelGraceMs' | 'drainMs' | 'maxCaptureBytes'>>;

/** Feed stdin, collect output, handle abort/exit/drain; resolve exactly once. */
function supervise(child: ChildProcess, argv0: string, cwd: string, input: unknown, signal: AbortSignal, t: Timings): Promise<Capture> {
  return new Promise<Capture>((resolve) => {
    const { head, tail } = headTailSplit(t.maxCaptureBytes);
    const out = new HeadTailBuffer(head, tail);
    const err = new HeadTailBuffer(head, tail);
    const streams = [child.stdout, child.stderr].filter((s): s is Readable => s !== null);
    let open = streams.length;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let done = false;

    const finish = (spawnError?: unknown): void => {
      if (done) return;
      done = true;
      clearTimeout(graceTimer);
      clearTimeout(drainTimer);
      signal.removeEventListener('abort', onAbort);
      for (const s of streams) s.destroy();
      child.stdin?.destroy();
      killGroup(child.pid, 'SIGKILL'); // leftovers of the group (backgrounded grandchildren)
      forgetGroup(child.pid);
      if (spawnError !== undefined) {
        void startFailureCapture(spawnError, argv0, cwd).then(resolve);
        return;
      }
      const stdout = out.bytes('stdout');
      const stderr = err.bytes('stderr');
      if (signal.aborted) {
        const { failure, reason } = describeAbort(signal);
        resolve(failureCapture(failure, reason, { stdout, stderr }));
      } else if (exit?.signal) {
        resolve(signalCapture(exit.signal, stdout, stderr));
      } else {
        resolve({ stdout, stderr, exitCode: exit?.code ?? 0 });
      }
    };

    const endDrain = (): void => {
      for (const s of streams) s.destroy();
      finish();
    };

    const onAbort = (): void => {
      if (done) return;
      if (exit) return; // already exited: the drain is bounded by drainMs, then the group gets SIGKILL
      killGroup(child.pid, 'SIGTERM');
      graceTimer ??= setTimeout(() => killGroup(child.pid, 'SIGKILL'), t.cancelGraceMs);
    };

    child.on('error', (error) => {
      // Emitted without a pid when the spawn itself failed (ENOENT, EACCES…); later errors (a failed
      // kill) change nothing: exit and stream closes still drive the call to its end.
      if (child.pid === undefined) finish(error);
    });
    child.on('exit', (code, sig) => {
      exit = { code, signal: sig };
      clearTimeout(graceTimer);
      if (open === 0) finish();
      else drainTimer = setTimeout(endDrain, t.drainMs);
    });
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
    for (const s of streams) {
      s.on('error', () => {}); // a destroyed pipe; the capture keeps what arrived
      s.on('close', () => {
        open--;
        if (open === 0 && exit) finish();
      });
    }
    if (child.stdin) {
      child.stdin.on('error', () => {}); // EPIPE: the tool did not read its input
      child.stdin.end(JSON.stringify(input ?? null));
    }
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
