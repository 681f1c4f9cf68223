/**
 * Turning a capture into the one `result` frame that answers a call (DESIGN §5): bytes as UTF-8
 * text or base64, and a frame that fits the server's `maxPayload`.
 */
import { type Capture, type ResultMessage, encodeMessage, failureCapture, toWire, utf8 } from '@toolwire/protocol';

/** The text a stream's bytes were encoded from, when that text was well-formed (see {@link textBytes}). */
const sourceText = new WeakMap<Uint8Array, string>();

/**
 * UTF-8 bytes of `text` for a capture, remembering `text` so the `result` frame reuses it instead of
 * validating and decoding the bytes back (protocol `toWire` would give the same text: a well-formed
 * string round-trips exactly). Only for bytes no one else can write to (a handler's string output).
 */
export function textBytes(text: string): Uint8Array {
  const bytes = utf8(text);
  if (bytes.length > 0 && (text as string & { isWellFormed(): boolean }).isWellFormed()) sourceText.set(bytes, text);
  return bytes;
}

/** `result.streamed`: what a call sent in `output` chunks before its result (protocol 2). */
export type Streamed = NonNullable<ResultMessage['streamed']>;

function build(id: string, capture: Capture, forceBase64: boolean, streamed: Streamed | undefined): ResultMessage {
  const message: ResultMessage = { type: 'result', id, stdout: '', stderr: '', exitCode: capture.exitCode };
  for (const stream of ['stdout', 'stderr'] as const) {
    const bytes = capture[stream];
    const known = forceBase64 ? undefined : sourceText.get(bytes);
    const wire =
      known !== undefined
        ? { text: known }
        : forceBase64 && bytes.length > 0
          ? { text: Buffer.from(bytes).toString('base64'), encoding: 'base64' as const }
          : toWire(bytes);
    message[stream] = wire.text;
    if (wire.encoding) message[stream === 'stdout' ? 'stdoutEncoding' : 'stderrEncoding'] = wire.encoding;
  }
  if (capture.failure) message.failure = capture.failure;
  if (streamed !== undefined) message.streamed = streamed;
  if (capture.content !== undefined) message.content = capture.content;
  if (capture.structured !== undefined) message.structured = capture.structured;
  return message;
}

/**
 * The `result` frame of a handler's string output — exactly what {@link encodeResultFrame} makes of
 * `{stdout: textBytes(text), stderr: empty, exitCode: 0}` — without making the bytes, when no byte
 * is needed: `text` is well-formed, at most `capBytes` UTF-8 bytes (not truncated) and the frame
 * fits `maxPayload`. Otherwise `undefined` (the caller takes the bytes path).
 */
export function encodeTextResultFrame(id: string, text: string, capBytes: number, maxPayload: number): string | undefined {
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed() || !fitsUtf8(text, capBytes)) return undefined;
  const frame = encodeMessage({ type: 'result', id, stdout: text, stderr: '', exitCode: 0 });
  return fitsUtf8(frame, maxPayload) ? frame : undefined;
}

/** `Buffer.byteLength(text) <= limit`, without scanning `text` when even 3 bytes per UTF-16 unit fit. */
function fitsUtf8(text: string, limit: number): boolean {
  return text.length * 3 <= limit || Buffer.byteLength(text) <= limit;
}

/**
 * The `result` frame for `capture`, encoded: its JSON text, ready to send as one text frame (encoded
 * once here, so the size check and the send share the work). Streams travel as UTF-8 text when
 * valid UTF-8, else base64 (protocol `toWire`). Text whose JSON escaping would overflow `maxPayload`
 * (e.g. many control characters, 6 bytes each) is sent as base64 instead — still an exact round
 * trip, at most 4/3 of the bytes. If even that does not fit, the call is answered 70 with the sizes
 * on stderr.
 *
 * @param maxPayload the server's `welcome.limits.maxPayload`, bytes (of the UTF-8 encoded text)
 * @param streamed for a call that sent `output` chunks: what they held (`result.streamed`); `capture` then holds only the rest
 */
export function encodeResultFrame(id: string, capture: Capture, maxPayload: number, streamed?: Streamed): string {
  const text = encodeMessage(build(id, capture, false, streamed));
  if (Buffer.byteLength(text) <= maxPayload) return text;
  const base64 = encodeMessage(build(id, capture, true, streamed));
  if (Buffer.byteLength(base64) <= maxPayload) return base64;
  if (capture.content !== undefined || capture.structured !== undefined) {
    // The MCP blocks do not fit: the streams alone (their text is on stdout) may still.
    const plain: Capture = { ...capture };
    delete plain.content;
    delete plain.structured;
    return encodeResultFrame(id, plain, maxPayload, streamed);
  }
  const reason =
    `result of ${capture.stdout.length} stdout + ${capture.stderr.length} stderr bytes ` + `does not fit the server's maxPayload of ${maxPayload} bytes`;
  return encodeMessage(build(id, failureCapture('host_error', reason), false, streamed));
}
