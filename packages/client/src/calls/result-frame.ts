/**
 * Turning a capture into the one `result` frame that answers a call (DESIGN §5): bytes as UTF-8
 * text or base64, and a frame that fits the server's `maxPayload`.
 */
import { type Capture, type ResultMessage, encodeMessage, failureCapture, toWire } from '@toolwire/protocol';

function build(id: string, capture: Capture, forceBase64: boolean): ResultMessage {
  const message: ResultMessage = { type: 'result', id, stdout: '', stderr: '', exitCode: capture.exitCode };
  for (const stream of ['stdout', 'stderr'] as const) {
    const bytes = capture[stream];
    const wire = forceBase64 && bytes.length > 0 ? { text: Buffer.from(bytes).toString('base64'), encoding: 'base64' as const } : toWire(bytes);
    message[stream] = wire.text;
    if (wire.encoding) message[stream === 'stdout' ? 'stdoutEncoding' : 'stderrEncoding'] = wire.encoding;
  }
  if (capture.failure) message.failure = capture.failure;
  return message;
}

/**
 * The `result` frame for `capture`. Streams travel as UTF-8 text when valid UTF-8, else base64
 * (protocol `toWire`). Text whose JSON escaping would overflow `maxPayload` (e.g. many control
 * characters, 6 bytes each) is sent as base64 instead — still an exact round trip, at most 4/3 of
 * the bytes. If even that does not fit, the call is answered 70 with the sizes on stderr.
 *
 * @param maxPayload the server's `welcome.limits.maxPayload`, bytes
 */
export function resultFrame(id: string, capture: Capture, maxPayload: number): ResultMessage {
  const text = build(id, capture, false);
  if (Buffer.byteLength(encodeMessage(text)) <= maxPayload) return text;
  const base64 = build(id, capture, true);
  if (Buffer.byteLength(encodeMessage(base64)) <= maxPayload) return base64;
  const reason =
    `result of ${capture.stdout.length} stdout + ${capture.stderr.length} stderr bytes ` +
    `does not fit the server's maxPayload of ${maxPayload} bytes`;
  return build(id, failureCapture('host_error', reason), false);
}
