/**
 * Sizing captures so one `result` frame fits the server's `maxPayload` (DESIGN §7).
 */
import { type Capture, headTail } from '@toolwire/protocol';

/**
 * Bytes of a `result` frame kept free of stream data: JSON keys, the call id, truncation markers
 * and `toolwire: <reason>` lines. 16 KiB.
 */
export const RESULT_RESERVE_BYTES = 16 * 1024;

/**
 * The per-stream capture cap for a server announcing `maxPayload`: the smaller of `maxCaptureBytes`
 * and the share of `maxPayload` (minus {@link RESULT_RESERVE_BYTES}) that two streams can use when
 * both travel as base64 (4 bytes per 3): `floor((maxPayload − reserve) · 3 / 8)`.
 * For the defaults (16 MiB, 8 MiB) this is 6285312 bytes.
 */
export function captureCapBytes(maxPayload: number, maxCaptureBytes: number): number {
  const share = Math.floor((Math.max(0, maxPayload - RESULT_RESERVE_BYTES) * 3) / 8);
  return Math.max(0, Math.min(maxCaptureBytes, share));
}

/** Split a per-stream cap into the bytes kept at the head and at the tail (half each). */
export function headTailSplit(capBytes: number): { head: number; tail: number } {
  const head = Math.floor(capBytes / 2);
  return { head, tail: capBytes - head };
}

/** Cap both streams of `capture` to `capBytes` each (head + marker line + tail). */
export function capCapture(capture: Capture, capBytes: number): Capture {
  const { head, tail } = headTailSplit(capBytes);
  const stdout = headTail(capture.stdout, head, tail, 'stdout');
  const stderr = headTail(capture.stderr, head, tail, 'stderr');
  if (stdout === capture.stdout && stderr === capture.stderr) return capture;
  return { ...capture, stdout, stderr };
}
