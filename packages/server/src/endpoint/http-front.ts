/**
 * The HTTP front of the server, before any token is looked at:
 * - DNS-rebinding protection ({@link HostPolicy}): a page on `evil.example` whose name a browser
 *   re-resolves to 127.0.0.1 reaches a loopback server with `Host: evil.example` (and, for GET, maybe
 *   no `Origin`), so on a loopback server a `Host` that is not a loopback name is refused with 403;
 * - OAuth discovery answers ({@link answerOAuthDiscovery}): MCP clients without a bearer token probe
 *   `/.well-known/oauth-*` and `/register`. The protected-resource metadata (RFC 9728) names the
 *   resource and no authorization server; the other OAuth paths answer 404 with an OAuth error body
 *   saying that a caller bearer token is what this server takes, so a client reports that instead of
 *   "Dynamic Client Registration rejected";
 * - the 401 of the MCP door ({@link unauthorized}): `WWW-Authenticate: Bearer` with an
 *   `error_description` and the metadata URL, and a body naming the fix.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';

/** How a caller token is made, in the answers below. */
export const TOKEN_ADVICE = 'an admin makes one with: toolwire token add caller NAME (it prints the token once)';

/** Path of the protected-resource metadata (RFC 9728 §3), and its form for the `/mcp` resource (§3.1). */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** True for a loopback IP address (127.0.0.0/8, ::1, IPv4-mapped 127.x). */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
}

/** The hostname of a `Host` header value (lower-case, IPv6 in brackets, no port), or `undefined` when it is not one. */
export function hostnameOf(host: string | undefined): string | undefined {
  return parseHost(host)?.hostname;
}

/** `host` (a `Host` header value) parsed: hostname and `host[:port]`, lower-case, only name characters; else `undefined`. */
function parseHost(host: string | undefined): { hostname: string; host: string } | undefined {
  if (host === undefined || host.length === 0 || host.length > 255 || !/^[A-Za-z0-9.\-[\]:_]+$/.test(host)) return undefined;
  try {
    const url = new URL(`http://${host}`);
    return { hostname: url.hostname.toLowerCase(), host: url.host.toLowerCase() };
  } catch {
    return undefined;
  }
}

/** True for `localhost`, `*.localhost` (RFC 6761), a 127.x address and `[::1]`. */
function isLoopbackName(hostname: string): boolean {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  if (hostname.startsWith('[')) return isLoopbackAddress(hostname.slice(1, -1));
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/**
 * Which `Host` values requests may carry (`ToolwireServerOptions.allowedHosts`). Checked when the
 * server listens on a loopback address, or on any address when `allowedHosts` is given: a loopback
 * name or a listed hostname (compared without the port, case-insensitively) passes; `"*"` lets any
 * `Host` pass. A request without `Host` fails the check.
 */
export class HostPolicy {
  readonly #allowed: ReadonlySet<string> | undefined;
  #loopback = false;
  /** The last `Host` value that passed: the common case (every host dialling the same name) skips the parse. */
  #lastPassed: string | undefined;

  /** @param allowedHosts resolved option (lower-case hostnames, IPv6 in brackets), `undefined` when not given */
  constructor(allowedHosts: readonly string[] | undefined) {
    this.#allowed = allowedHosts === undefined ? undefined : new Set(allowedHosts);
  }

  /** The server is listening on `address` (the bound IP). */
  listening(address: string): void {
    this.#loopback = isLoopbackAddress(address);
    this.#lastPassed = undefined;
  }

  /** `undefined` when `host` (the `Host` header) may be served, else the reason for the 403. */
  refusal(host: string | undefined): string | undefined {
    if (this.#allowed === undefined && !this.#loopback) return undefined;
    if (this.#allowed?.has('*')) return undefined;
    if (host !== undefined && host === this.#lastPassed) return undefined;
    const hostname = hostnameOf(host);
    if (hostname !== undefined && (isLoopbackName(hostname) || this.#allowed?.has(hostname))) {
      this.#lastPassed = host;
      return undefined;
    }
    const shown = host === undefined ? 'no Host header' : `Host ${JSON.stringify(host.slice(0, 100))}`;
    return `${shown} is not allowed here (DNS-rebinding protection): use a loopback name (localhost, 127.0.0.1, [::1]) or list the name in allowedHosts`;
  }
}

/**
 * Check `allowedHosts` and normalize it (lower-case; IPv6 literals in brackets).
 * @throws TypeError for anything but an array of hostnames (no scheme, port or path) or `"*"`
 */
export function normalizeAllowedHosts(hosts: unknown): readonly string[] {
  const problem = 'ToolwireServerOptions.allowedHosts must be an array of hostnames without port, e.g. ["toolwire.example.com", "[::1]"], or ["*"]';
  if (!Array.isArray(hosts)) throw new TypeError(problem);
  return Object.freeze(
    hosts.map((host: unknown) => {
      if (host === '*') return '*';
      const v6 = typeof host === 'string' && isIP(host) === 6;
      const name = typeof host === 'string' ? hostnameOf(v6 ? `[${host}]` : host) : undefined;
      if (name === undefined || hostnameOf(name) !== name || (!v6 && /:\d*$/.test(String(host)))) throw new TypeError(`${problem}; got ${JSON.stringify(host)}`);
      return name;
    }),
  );
}

/** `http(s)://<Host>` as the client reached this server (`Host` already checked), or `undefined` for an unusable `Host`. */
export function originOf(req: IncomingMessage): string | undefined {
  const parsed = parseHost(req.headers.host);
  if (parsed === undefined) return undefined;
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
  return `${secure ? 'https' : 'http'}://${parsed.host}`;
}

/** Answer a refused `Host`: 403, a JSON body with the reason (JSON-RPC shaped on `/mcp`). */
export function refuseHost(res: ServerResponse, path: string, reason: string): void {
  const body = path === '/mcp' ? { jsonrpc: '2.0', error: { code: -32000, message: `Forbidden: ${reason}` }, id: null } : { error: reason };
  res.writeHead(403, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify(body));
}

const NO_OAUTH = `this server does not use OAuth: send "Authorization: Bearer <caller token>"; ${TOKEN_ADVICE}`;

/** OAuth paths answered 404 with an OAuth error body (RFC 6749 §5.2 shape) naming the bearer token. */
function isOtherOAuthPath(path: string): boolean {
  return (
    path === '/register' ||
    path === '/authorize' ||
    path === '/token' ||
    /^\/\.well-known\/(oauth-authorization-server|openid-configuration)(\/|$)/.test(path) ||
    /^\/mcp\/\.well-known\/(oauth-authorization-server|openid-configuration|oauth-protected-resource)$/.test(path)
  );
}

/**
 * Answer an OAuth discovery request and return true, or return false when `path` is not one:
 * - `GET /.well-known/oauth-protected-resource[/mcp]` → 200 `{resource: "<origin>/mcp",
 *   bearer_methods_supported: ["header"], resource_name}`, no `authorization_servers`;
 * - `/.well-known/oauth-authorization-server…`, `/.well-known/openid-configuration…`, `/register`,
 *   `/authorize`, `/token` → 404 `{error: "invalid_request", error_description}`.
 */
export function answerOAuthDiscovery(req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (path === RESOURCE_METADATA_PATH || path === `${RESOURCE_METADATA_PATH}/mcp`) {
    const origin = originOf(req);
    if (origin === undefined) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'a Host header is needed to name the resource' }));
      return true;
    }
    const metadata = {
      resource: `${origin}/mcp`,
      bearer_methods_supported: ['header'],
      resource_name: `toolwire MCP server: needs a caller bearer token (no OAuth authorization server); ${TOKEN_ADVICE}`,
    };
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(metadata));
    return true;
  }
  if (!isOtherOAuthPath(path)) return false;
  res.writeHead(404, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error: 'invalid_request', error_description: NO_OAUTH }));
  return true;
}

/**
 * The 401 of the MCP door: `WWW-Authenticate: Bearer` with `error="invalid_token"` when a token was
 * sent (RFC 6750 §3.1), an `error_description`, and `resource_metadata` (RFC 9728 §5.1); the body a
 * JSON-RPC error whose message says what is needed and how it is made.
 */
export function unauthorized(req: IncomingMessage): { headers: Record<string, string>; message: string } {
  const sent = req.headers.authorization !== undefined;
  const description = sent ? 'the bearer token is not a caller token of this server' : 'a caller bearer token is required';
  const params = [...(sent ? ['error="invalid_token"'] : []), `error_description="${description}"`];
  const origin = originOf(req);
  if (origin !== undefined) params.push(`resource_metadata="${origin}${RESOURCE_METADATA_PATH}/mcp"`);
  return {
    headers: { 'www-authenticate': `Bearer ${params.join(', ')}` },
    message: `Unauthorized: ${description} (header "Authorization: Bearer <caller token>"); ${TOKEN_ADVICE}`,
  };
}
