/** Refusing an HTTP upgrade before the WebSocket handshake: a status line (no detail, except a 429's reason), socket destroyed. */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { retryAfterSeconds, tooManyFailures } from '../auth/limiter.js';

/**
 * Why an upgrade (or a request node:http could not parse) is refused: 400 malformed request, 401
 * failed auth, 403 origin not allowed, 408 headers or body too slow, 429 too many failures or
 * connections of one identity, 431 request head too large, 503 endpoint closed or full.
 */
export type RejectStatus = 400 | 401 | 403 | 408 | 429 | 431 | 503;

/**
 * The status node:http would answer a `'clientError'` with: 431 for a request head over
 * `maxHeaderSize`, 408 for `headersTimeout`/`requestTimeout`, 400 for any other parse error;
 * `undefined` when the peer is gone (nothing to answer).
 */
export function clientErrorStatus(error: NodeJS.ErrnoException): RejectStatus | undefined {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return undefined;
  if (error.code === 'HPE_HEADER_OVERFLOW') return 431;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

/**
 * Answer the upgrade with `status`, then destroy the socket once the response is flushed. 401
 * carries `WWW-Authenticate: Bearer` (RFC 6750 §3), an empty body and nothing about why; 429 and 503
 * may carry `Retry-After` in whole seconds (RFC 9110 §10.2.3) when `retryAfterMs` is given, and
 * `reason` (one line of ASCII text, e.g. the limiter's "too many failed authentications …") as a
 * `text/plain` body; otherwise the body is empty. `authFailed` marks a 429 that answers a token
 * that was checked and not accepted (the address is throttled for failed authentications): it
 * carries `WWW-Authenticate: Bearer error="invalid_token"` (RFC 9110 §11.6.1 allows the challenge on
 * any status; RFC 6750 §3.1 names the error), so a tool host knows that waiting will not help and
 * stops as for a 401. A 429 for a valid token (connections of one identity) never carries it.
 */
export function rejectUpgrade(socket: Duplex, status: RejectStatus, retryAfterMs?: number, reason?: string, authFailed = false): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once('finish', destroyOnFinish);
  const bare = retryAfterMs === undefined && reason === undefined && !authFailed;
  socket.end(bare ? plainResponseOf(status) : responseOf(status, retryAfterMs === undefined ? undefined : retryAfterSeconds(retryAfterMs), reason, authFailed));
}

/**
 * Refuse a failed authentication from a throttled address: {@link rejectUpgrade} with 429, its
 * `Retry-After`, the limiter's reason ({@link tooManyFailures}) and `authFailed`; the answer is
 * looked up by its whole seconds, without building the reason or a key per refusal.
 */
export function rejectThrottled(socket: Duplex, retryAfterMs: number): void {
  const seconds = retryAfterSeconds(retryAfterMs);
  let response = throttled.get(seconds);
  if (response === undefined) {
    response = responseOf(429, seconds, tooManyFailures(retryAfterMs), true);
    if (throttled.size >= MAX_CACHED) throttled.clear();
    throttled.set(seconds, response);
  }
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once('finish', destroyOnFinish);
  socket.end(response);
}

/** `'finish'` listener of a refused socket (one function for all: nothing is allocated per refusal). */
function destroyOnFinish(this: Duplex): void {
  this.destroy();
}

/**
 * Responses built so far, by everything they depend on. A flood of refused upgrades gets the same
 * few answers (401; 429 with the limiter's reason and a retry of a few seconds), so each is built
 * once and written as it is. Bounded: past {@link MAX_CACHED} answers it starts again.
 */
const responses = new Map<string, Buffer>();
const MAX_CACHED = 256;
/** Responses with a status line and nothing else to vary, by status. */
const plain = new Map<RejectStatus, Buffer>();
/** {@link rejectThrottled}'s answers, by `Retry-After` seconds. */
const throttled = new Map<number, Buffer>();

function plainResponseOf(status: RejectStatus): Buffer {
  let response = plain.get(status);
  if (response === undefined) plain.set(status, (response = responseOf(status, undefined, undefined, false)));
  return response;
}

function responseOf(status: RejectStatus, retryAfter: number | undefined, reason: string | undefined, authFailed: boolean): Buffer {
  const key = `${status}|${retryAfter ?? ''}|${authFailed ? 1 : 0}|${reason ?? ''}`;
  let response = responses.get(key);
  if (response === undefined) {
    const body = reason === undefined ? '' : `${reason}\n`;
    const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status]}`, 'Connection: close', `Content-Length: ${Buffer.byteLength(body)}`];
    if (body !== '') lines.push('Content-Type: text/plain; charset=utf-8');
    if (status === 401) lines.push('WWW-Authenticate: Bearer');
    else if (authFailed) lines.push('WWW-Authenticate: Bearer error="invalid_token"');
    if (retryAfter !== undefined) lines.push(`Retry-After: ${retryAfter}`);
    response = Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`);
    if (responses.size >= MAX_CACHED) responses.clear();
    responses.set(key, response);
  }
  return response;
}
