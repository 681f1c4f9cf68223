/**
 * A failed TLS handshake on the server's TLS port. It only concerns that socket, which is destroyed;
 * when the peer spoke plain HTTP there (`ws://` or `http://` to a `wss://` port: OpenSSL's
 * `ERR_SSL_HTTP_REQUEST`), it is first answered `400 Bad Request` in plain text saying the port speaks
 * TLS — so a tool host stops with that reason instead of redialing a silent "socket hang up"
 * forever, and a caller is told what to change. The answer is a fixed 100-odd bytes written once on
 * the TCP socket under the TLS one; the socket stays counted by the pre-auth guard until it closes.
 */
import { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../options.js';

/** The body of the plain-text answer to plain HTTP on the TLS port. */
export const PLAIN_ON_TLS_BODY = 'this port speaks TLS: use wss:// or https://\n';

const ANSWER =
  'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n' +
  `Content-Length: ${Buffer.byteLength(PLAIN_ON_TLS_BODY)}\r\n\r\n${PLAIN_ON_TLS_BODY}`;

/** The `'tlsClientError'` listener of the server's `https.Server`; `log` gets one debug line per failure. */
export function onTlsClientError(log: Logger): (error: Error & { code?: string }, socket: TLSSocket) => void {
  return (error, socket) => {
    log.debug({ err: error }, 'TLS handshake failed');
    // The TCP socket the TLS socket wraps (Node keeps it as `_parent`; not a documented field, so checked).
    const tcp = (socket as unknown as { _parent?: unknown })._parent;
    if (error.code === 'ERR_SSL_HTTP_REQUEST' && tcp instanceof Socket && tcp.writable) {
      tcp.on('error', () => {}); // a peer gone meanwhile: nothing to tell it
      tcp.end(ANSWER, () => socket.destroy());
      return;
    }
    socket.destroy();
  };
}
