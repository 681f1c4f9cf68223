/** What a stopped call settles with (DESIGN §4): exit 130 and one `toolwire: cancelled by stop` reason line. */
import { type Capture, failureCapture, FailureKind } from '@toolwire/protocol';

/** The reason of a stopped call's capture (with the session's own reason after it when the session ended). */
export const STOP_REASON = 'cancelled by stop';
const STOP_LINE = Buffer.from(`toolwire: ${STOP_REASON}\n`);

/**
 * A stopped call's capture from the host's partial output: 130, stderr ending with one
 * `toolwire: cancelled by stop` line — the host's own when it already reported the stop (a tool host
 * does), else appended (DESIGN §4: one reason line, not two).
 */
export function stoppedCapture(stdout: Uint8Array, stderr: Uint8Array): Capture {
  const tail = stderr.subarray(stderr.length - STOP_LINE.length);
  const own = stderr.length >= STOP_LINE.length && (stderr.length === STOP_LINE.length || stderr[stderr.length - STOP_LINE.length - 1] === 0x0a);
  if (own && STOP_LINE.equals(tail)) return { stdout, stderr, exitCode: FailureKind.cancelled, failure: 'cancelled' };
  return failureCapture('cancelled', STOP_REASON, { stdout, stderr });
}
