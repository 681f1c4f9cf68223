/**
 * The `/status` endpoints' HTTP replies (every one with the page's security headers) and the
 * bounded read of a request body (`status-http.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECURITY_HEADERS } from './pages.js';

/** Send `body` (none: `undefined`, for HEAD) as `type` with `status` and the security headers. */
export function reply(res: ServerResponse, status: number, type: string, body: string | Buffer | undefined): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type });
  res.end(body);
}

/** Send `value` as JSON with `status`. */
export function json(res: ServerResponse, status: number, value: unknown): void {
  reply(res, status, 'application/json', JSON.stringify(value));
}

/** 401 with a `Bearer` challenge and how to log in. */
export function unauthorized(res: ServerResponse): void {
  res.setHeader('www-authenticate', 'Bearer');
  json(res, 401, { error: 'log in at /status, or send Authorization: Bearer <caller token>' });
}

/** 405, naming the methods `allow`ed. */
export function notAllowed(res: ServerResponse, allow: string): void {
  res.setHeader('allow', allow);
  json(res, 405, { error: 'method not allowed' });
}

/** 413, then the connection ends (the rest of the body is not read). */
export function tooLarge(res: ServerResponse, req: IncomingMessage): void {
  res.setHeader('connection', 'close');
  json(res, 413, { error: 'request body too large' });
  req.socket.end();
}

/** The body as text, or `undefined` once it exceeds `max` bytes (the rest is not read). */
export function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', () => resolve(undefined));
    req.once('close', () => resolve(undefined)); // a no-op after 'end'
  });
}
