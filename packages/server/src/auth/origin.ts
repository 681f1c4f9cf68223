/**
 * Origin policy (browser-originated requests). Browsers send `Origin` on every WebSocket upgrade and
 * on cross-origin fetches; tool hosts, the CLI and SDK clients do not. A page on any site could
 * otherwise make a visitor's browser dial a server it can reach (cross-site WebSocket hijacking,
 * DNS rebinding), so a request with an `Origin` header is refused unless the origin is allowed.
 */
import type { IncomingMessage } from 'node:http';
import { headerOf } from '../endpoint/request-header.js';

/**
 * True when `req` carries no `Origin` header, or its origin is in `allowed` (lower-case entries,
 * compared exactly after lower-casing). `Origin: null` (sandboxed pages, file://) is never allowed
 * unless `"null"` is listed.
 */
export function originAllowed(req: IncomingMessage, allowed: readonly string[]): boolean {
  const origin = headerOf(req, 'origin');
  if (origin === undefined) return true;
  return allowed.includes(origin.toLowerCase());
}

/**
 * True when `req`'s `Origin` is the server's own origin as the request addressed it: the scheme
 * of this connection (`https` under TLS) and exactly the `Host` header (case-insensitive). A page the
 * server itself served (e.g. `/status`) calling it back is same-origin; a DNS-rebinding page is not,
 * as its `Host` is refused before this (`endpoint/http-front.ts`, loopback servers).
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const { origin, host } = req.headers;
  if (origin === undefined || host === undefined) return false;
  const scheme = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  return origin.toLowerCase() === `${scheme}://${host.toLowerCase()}`;
}
