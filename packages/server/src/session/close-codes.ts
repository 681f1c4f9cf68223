/**
 * Close-code helpers for host sessions: mapping ws's own protocol errors to the close code ws sent,
 * naming codes in stderr reasons, and bounding close-frame reason text.
 */
import { CloseCode, closeCodeName } from '@toolwire/protocol';

/** Longest close-frame reason, bytes (RFC 6455 §5.5: control payload ≤ 125, minus the 2-byte code). */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * Close code ws uses when its receiver refuses a frame (`error.code` `WS_ERR_*`; ws then closes the
 * socket itself with that code): invalid UTF-8 → 1007, over `maxPayload` → 1009, too many buffered
 * fragments → 1008, any other framing error → 1002. `undefined` for errors that are not frame
 * refusals (e.g. `ECONNRESET`); those end in a plain socket close.
 */
export function wsErrorCloseCode(error: unknown): number | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !code.startsWith('WS_ERR_')) return undefined;
  switch (code) {
    case 'WS_ERR_INVALID_UTF8':
      return CloseCode.INVALID_PAYLOAD;
    case 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH':
    case 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH':
      return CloseCode.MESSAGE_TOO_BIG;
    case 'WS_ERR_TOO_MANY_BUFFERED_PARTS':
      return CloseCode.POLICY_VIOLATION;
    default:
      return CloseCode.PROTOCOL_ERROR;
  }
}

/** `"<code> <NAME>"` for logs and stderr, e.g. `"4000 REPLACED"`, `"1006 ABNORMAL_CLOSURE"`. */
export function describeClose(code: number): string {
  if (code === 1005) return '1005 NO_STATUS_RECEIVED';
  if (code === 1006) return '1006 ABNORMAL_CLOSURE';
  return `${code} ${closeCodeName(code)}`;
}

/** `text` cut to at most {@link MAX_CLOSE_REASON_BYTES} UTF-8 bytes (ws throws on longer reasons). */
export function closeReasonText(text: string): string {
  let out = text;
  while (Buffer.byteLength(out, 'utf8') > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}

/** A peer-supplied close reason made safe for one log/stderr line: control characters removed, bounded. */
export function peerReasonText(reason: Buffer): string {
  return (
    reason
      .toString('utf8')
      // eslint-disable-next-line no-control-regex -- matching control characters is the point: they are replaced by spaces
      .replace(/[\u0000-\u001f\u007f]/g, ' ')
      .slice(0, MAX_CLOSE_REASON_BYTES)
  );
}
