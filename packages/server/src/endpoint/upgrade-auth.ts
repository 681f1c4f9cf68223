/**
 * Who is upgrading (DESIGN §5): authentication happens at the HTTP upgrade, before any frame. A host
 * token maps to the host identity; a host never names itself, except in loopback dev mode.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal, TokenTable } from '../auth/tokens.js';
import type { HostIdentity } from '../session/hello.js';
import { headerOf } from './request-header.js';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** True for a peer address on the loopback interface (127.0.0.1, ::1, or IPv4-mapped 127.0.0.1). */
export function isLoopbackAddress(address: string | undefined): boolean {
  return address !== undefined && LOOPBACK.has(address);
}

/** An authenticated upgrade: the session's identity and, for a token, the principal it was granted by (for revocation). */
export interface UpgradeIdentity {
  identity: HostIdentity;
  principal?: Principal;
}

/**
 * Identify an upgrade request as a tool host.
 * - `Authorization: Bearer <host token>` → `{kind: 'token', name}`; any other Authorization value
 *   (unknown token, caller token, malformed) → `undefined`, with or without dev mode;
 * - no Authorization header, `loopbackDev` on and the peer on loopback → `{kind: 'loopback'}` (the
 *   host names itself in `hello.name`). Do not enable dev mode behind a local reverse proxy: every
 *   proxied peer would look like loopback;
 * - otherwise `undefined` (→ HTTP 401).
 */
export function identifyHost(req: IncomingMessage, tokens: TokenTable, loopbackDev: boolean): UpgradeIdentity | undefined {
  const authorization = headerOf(req, 'authorization');
  if (authorization !== undefined) {
    const principal = tokens.authenticate(authorization, 'host');
    return principal === undefined ? undefined : { identity: { kind: 'token', name: principal.name }, principal };
  }
  if (loopbackDev && isLoopbackAddress(req.socket.remoteAddress)) return { identity: { kind: 'loopback' } };
  return undefined;
}
