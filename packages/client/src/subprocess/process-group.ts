/**
 * Process-group signalling and the exit-code conventions of a subprocess tool (DESIGN §4, §7).
 */
import { constants } from 'node:os';
import { type Capture, SIGNAL_EXIT_BASE, appendReason, failureCapture } from '@toolwire/protocol';

/**
 * Send `signal` to the whole process group led by `pid` (`kill(-pid, sig)`; the tool was spawned
 * `detached`, so it leads its own group). A group that is already gone (ESRCH) is not an error.
 */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined || pid <= 0) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone; EPERM: not ours any more. Nothing left to do either way.
  }
}

/** `128 + n` for a process killed by signal `n` that toolwire did not send (POSIX shell convention). */
export function signalExitCode(signal: NodeJS.Signals): number {
  const n = constants.signals[signal] ?? 0;
  return Math.min(SIGNAL_EXIT_BASE + n, 255);
}

/** The capture of a tool killed by a signal we did not send: `128 + n`, `toolwire: killed by signal SIGx`. */
export function signalCapture(signal: NodeJS.Signals, stdout: Uint8Array, stderr: Uint8Array): Capture {
  return { stdout, stderr: appendReason(stderr, `killed by signal ${signal}`), exitCode: signalExitCode(signal) };
}

const CANNOT_EXECUTE = new Set(['EACCES', 'EPERM', 'ENOEXEC', 'EISDIR', 'ENOTDIR', 'ELOOP']);

/**
 * The capture for a command that could not be started: ENOENT → 127 (`command not found`),
 * EACCES/EPERM/ENOEXEC/EISDIR/ENOTDIR → 126 (`cannot execute`), anything else → 70.
 */
export function spawnFailureCapture(error: unknown, argv0: string): Capture {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'ENOENT') return failureCapture('not_found', `command not found: ${JSON.stringify(argv0)}`);
  if (code !== undefined && CANNOT_EXECUTE.has(code)) {
    return failureCapture('cannot_execute', `cannot execute ${JSON.stringify(argv0)}: ${code}`);
  }
  return failureCapture('host_error', `cannot start ${JSON.stringify(argv0)}: ${message}`);
}
