/** Refusing an HTTP upgrade before the WebSocket handshake: a bare status line, no detail, socket destroyed. */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Answer the upgrade with `status` (401 failed auth, 503 endpoint closed) and an empty body, then
 * destroy the socket once the response is flushed. 401 carries `WWW-Authenticate: Bearer`
 * (RFC 6750 §3) and nothing about why.
 */
export function rejectUpgrade(socket: Duplex, status: 401 | 503): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'Connection: close', 'Content-Length: 0'];
  if (status === 401) lines.push('WWW-Authenticate: Bearer');
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n`);
}
