/**
 * Running an in-process tool handler for one call (DESIGN §7 "In-process tools").
 */
import { type Capture, type Failure, FailureKind, failureCapture } from '@toolwire/protocol';
import type { ToolContext, ToolHandler } from '../types.js';
import type { CallAbort } from './abort.js';
import { textBytes } from './result-frame.js';

const EMPTY = new Uint8Array(0);

function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array;
}

/**
 * A handler's return value as a capture: a string is stdout with exit code 0; an object must be a
 * capture (`stdout`/`stderr` Uint8Array, `exitCode` an integer 0–255; missing streams are empty).
 * Anything else → 70 `result could not be built`.
 */
export function handlerOutputToCapture(value: unknown): Capture {
  if (typeof value === 'string') return { stdout: textBytes(value), stderr: EMPTY, exitCode: 0 };
  if (typeof value === 'object' && value !== null) {
    const v = value as Partial<Capture>;
    const stdout = v.stdout ?? EMPTY;
    const stderr = v.stderr ?? EMPTY;
    const code = v.exitCode;
    const failureOk = v.failure === undefined || Object.hasOwn(FailureKind, v.failure);
    if (isBytes(stdout) && isBytes(stderr) && Number.isInteger(code) && code! >= 0 && code! <= 255 && failureOk) {
      const capture: Capture = { stdout, stderr, exitCode: code! };
      if (v.failure !== undefined) capture.failure = v.failure;
      return capture;
    }
  }
  return failureCapture('host_error', 'result could not be built: a tool handler must return a string or {stdout, stderr, exitCode 0-255}');
}

/**
 * The end of a call as its context sees it: `fail` makes its synthetic captures (a throw → 70, an
 * abandoned call → 124/130) after what the tool wrote with `ctx.write`; `aborted` is told of the
 * abort (the call's output stops waiting for the window).
 */
export interface Failing {
  fail(failure: Failure, reason: string): Capture;
  aborted?(): void;
}

/** Synthetic captures with no output before them. */
const PLAIN: Failing = { fail: failureCapture };

function abortCapture(abort: CallAbort, by: Failing): Capture {
  const reason = abort.reason;
  return reason === undefined ? by.fail('cancelled', 'cancelled') : by.fail(reason.failure, reason.message);
}

/** The capture of a handler that threw: the abort's capture when the call was aborted first, else 70. */
function thrownCapture(error: unknown, abort: CallAbort, by: Failing): Capture {
  if (abort.aborted) return abortCapture(abort, by);
  const message = error instanceof Error ? error.message : String(error);
  return by.fail('host_error', `tool failed: ${message}`);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Call `handler` now. When it returns synchronously (anything but a thenable) or throws, its
 * capture is known at once — as {@link awaitHandler} would resolve it, without the promise hops, so
 * the call can be answered within the frame that carried it. A string comes back as `text` (stdout,
 * exit code 0: `handlerOutputToCapture(text)` when bytes are needed); a thenable as `pending`, for
 * {@link awaitHandler}. Never throws. `by` makes the capture of a throw (70, or the abort's).
 */
export function startHandler(
  handler: ToolHandler,
  input: unknown,
  ctx: ToolContext,
  abort: CallAbort,
  by: Failing = PLAIN,
): { text: string } | { capture: Capture } | { pending: unknown } {
  let value: unknown;
  try {
    value = handler(input, ctx);
    if (typeof value === 'string') return { text: value };
    if (!isThenable(value)) return { capture: handlerOutputToCapture(value) };
  } catch (error) {
    return { capture: thrownCapture(error, abort, by) };
  }
  return { pending: value };
}

/**
 * Resolve with the capture of a handler already called: `pending` is the thenable it returned (see
 * {@link startHandler}); never rejects. A rejection → 70 with the message on stderr, unless the call
 * was aborted first (then the abort's capture). Once `abort` fires (it is what `ctx.signal`
 * reports), the handler gets `abandonAfterMs` more to return its partial output; after that the call
 * is answered with the abort's capture and the handler's eventual outcome is ignored (in-process
 * code cannot be killed). `by` makes the synthetic captures and is told of the abort.
 */
export function awaitHandler(pending: unknown, abandonAfterMs: number, abort: CallAbort, by: Failing = PLAIN): Promise<Capture> {
  const work = (async (): Promise<Capture> => {
    try {
      return handlerOutputToCapture(await pending);
    } catch (error) {
      return thrownCapture(error, abort, by);
    }
  })();
  return new Promise<Capture>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    // Watched through `abort`, not `ctx.signal`: that keeps the AbortSignal unmade unless the tool reads it.
    abort.onAbort(() => {
      by.aborted?.();
      timer = setTimeout(() => resolve(abortCapture(abort, by)), abandonAfterMs);
    });
    void work.then((capture) => {
      clearTimeout(timer);
      abort.onAbort(undefined);
      resolve(capture);
    });
  });
}
