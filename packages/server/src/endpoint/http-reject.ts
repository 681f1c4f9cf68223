/** Refusing an HTTP upgrade before the WebSocket handshake: a bare status line, no detail, socket destroyed. */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** Why an upgrade is refused: 401 failed auth, 403 origin not allowed, 429 too many failures or connections of one identity, 503 endpoint closed or full. */
export type RejectStatus = 401 | 403 | 429 | 503;

/**
 * Answer the upgrade with `status` and an empty body, then destroy the socket once the response is
 * flushed. 401 carries `WWW-Authenticate: Bearer` (RFC 6750 §3) and nothing about why; 429 and 503
 * may carry `Retry-After` in whole seconds (RFC 9110 §10.2.3) when `retryAfterMs` is given.
 */
export function rejectUpgrade(socket: Duplex, status: RejectStatus, retryAfterMs?: number): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'Connection: close', 'Content-Length: 0'];
  if (status === 401) lines.push('WWW-Authenticate: Bearer');
  if (retryAfterMs !== undefined) lines.push(`Retry-After: ${Math.max(1, Math.ceil(retryAfterMs / 1000))}`);
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n`);
}
