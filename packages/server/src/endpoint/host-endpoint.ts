/**
 * The tool-host WebSocket endpoint (DESIGN §5): authenticates each HTTP upgrade, completes the
 * handshake with `ws` (noServer, JSON text only), and runs one {@link HostSession} per connection.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { SUBPROTOCOLS } from '@toolwire/protocol';
import pTimeout from 'p-timeout';
import { type WebSocket, WebSocketServer } from 'ws';
import type { AuthLimiter } from '../auth/limiter.js';
import { originAllowed } from '../auth/origin.js';
import type { Principal, TokenTable } from '../auth/tokens.js';
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import { HostSession, type SessionOptions } from '../session/host-session.js';
import { rejectThrottled, rejectUpgrade } from './http-reject.js';
import { type UpgradeIdentity, identifyHost } from './upgrade-auth.js';

/** Bound on the wait for sockets destroyed by `terminate()` to report 'close' during `close()`, ms. */
const TERMINATE_WAIT_MS = 1_000;

/** What the endpoint reads (the `ToolwireServerOptions` of the same names), and its sessions' slice. */
export interface EndpointOptions {
  /** Largest frame accepted, bytes (ws `maxPayload`). */
  maxPayload: number;
  perMessageDeflate: boolean;
  /** Allowed browser origins, lower-case. */
  allowedOrigins: readonly string[];
  loopbackDev: boolean;
  maxConnections: number;
  maxConnectionsPerHost: number;
  /** How long `close()` waits for peers to complete the close handshake before terminating them, ms (`cancelGraceMs`). */
  closeWaitMs: number;
  logger: Logger;
  /** Handed to every {@link HostSession}. */
  session: SessionOptions;
}

/** Dependencies of the endpoint. */
export interface HostEndpointDeps {
  options: EndpointOptions;
  tokens: TokenTable;
  router: Router;
  /** Failed-authentication limiter, shared with the MCP door. */
  limiter: AuthLimiter;
  /** Told about the socket of every admitted upgrade (it leaves the pre-auth accounting). Default: nothing. */
  authenticated?: (socket: Socket) => void;
}

/**
 * Accepts tool-host connections. Wire it to an `http.Server`:
 * `server.on('upgrade', (req, socket, head) => endpoint.handleUpgrade(req, socket, head))`.
 */
export class HostEndpoint {
  readonly #options: EndpointOptions;
  readonly #tokens: TokenTable;
  readonly #router: Router;
  readonly #wss: WebSocketServer;
  readonly #limiter: AuthLimiter;
  readonly #authenticated: ((socket: Socket) => void) | undefined;
  /** Open sessions and the token principal each was admitted with (`undefined`: loopback dev). */
  readonly #sessions = new Map<HostSession, Principal | undefined>();
  /** Open sessions per token identity (for `maxConnectionsPerHost`). */
  readonly #perHost = new Map<string, number>();
  /** The `'error'` listener of every upgrading socket: one function, not one closure per connection (it stays on the socket for its life). */
  readonly #onSocketError: (error: Error) => void;
  /** Whether a name is a configured host identity (handed to every session; one function for all). */
  readonly #reserved: (name: string) => boolean;
  #closing: Promise<void> | undefined;

  constructor(deps: HostEndpointDeps) {
    this.#options = deps.options;
    this.#tokens = deps.tokens;
    this.#router = deps.router;
    this.#limiter = deps.limiter;
    this.#authenticated = deps.authenticated;
    const log = this.#options.logger;
    this.#onSocketError = (error) => log.debug({ err: error }, 'host upgrade socket error');
    const tokens = deps.tokens;
    this.#reserved = (name) => tokens.hasHost(name);
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#options.maxPayload,
      // Off unless enabled; when on, ws bounds the inflated message by maxPayload (→ 1009).
      perMessageDeflate: this.#options.perMessageDeflate,
      clientTracking: false,
      // Select `toolwire.v1` when offered; otherwise answer without a subprotocol.
      // The newest protocol version both sides speak (DESIGN §5, versions); none of ours → refused.
      handleProtocols: (protocols) => SUBPROTOCOLS.find((p) => protocols.has(p)) ?? false,
    });
    this.#wss.on('error', (error) => this.#options.logger.error({ err: error }, 'host endpoint error'));
  }

  /** Connections currently open (including those that have not sent `hello` yet). */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /**
   * Handle an `http.Server` `'upgrade'`. Every refusal is a status line (a 429 for failed
   * authentication also carries a one-line text body naming the reason), socket destroyed, no upgrade. In order:
   * - after `close()` → 503;
   * - an `Origin` header not in `options.allowedOrigins` (a browser) → 403;
   * - auth: `Authorization: Bearer <host token>` → host identity, even while the address is
   *   throttled; otherwise a failure, counted by the limiter: 401, or — when the peer's address
   *   failed `authMaxFailures` times within the window — 429 with `Retry-After` and the body
   *   `too many failed authentications from this address; retry after N s`, plus
   *   `WWW-Authenticate: Bearer error="invalid_token"` (the token was checked: a host stops). Logged at warn with
   *   the remote address, never the token. In `options.loopbackDev` mode a tokenless upgrade from 127.0.0.1/::1 may name itself
   *   in `hello.name` (default `local`; a configured host identity may not be claimed that way);
   * - `options.maxConnections` host connections open → 503; `options.maxConnectionsPerHost` open
   *   for this identity → 429.
   * Never throws.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const log = this.#options.logger;
    const remote = req.socket.remoteAddress;
    socket.on('error', this.#onSocketError);
    if (this.#closing !== undefined) return rejectUpgrade(socket, 503);
    if (!originAllowed(req, this.#options.allowedOrigins)) {
      log.warn({ remote, origin: String(req.headers.origin).slice(0, 200) }, 'host upgrade refused: origin not allowed');
      return rejectUpgrade(socket, 403);
    }
    // The token is checked first (a constant-time digest compare, cheap): a valid token is admitted
    // even while its address is throttled for failed ones; only failures are slowed (issue 10 §5).
    const admitted = identifyHost(req, this.#tokens, this.#options.loopbackDev);
    if (admitted === undefined) {
      const limit = this.#limiter.checkAndFail(remote);
      if (limit.blocked) {
        log.warn({ remote }, 'host upgrade refused: not authenticated; too many failed authentications from this address');
        return rejectThrottled(socket, limit.retryAfterMs);
      }
      log.warn({ remote }, 'host upgrade refused: not authenticated');
      return rejectUpgrade(socket, 401);
    }
    if (this.#sessions.size >= this.#options.maxConnections) {
      log.warn({ remote, limit: this.#options.maxConnections }, 'host upgrade refused: maxConnections reached');
      return rejectUpgrade(socket, 503, 1_000);
    }
    const name = admitted.identity.kind === 'token' ? admitted.identity.name : undefined;
    if (name !== undefined && (this.#perHost.get(name) ?? 0) >= this.#options.maxConnectionsPerHost) {
      log.warn({ remote, host: name, limit: this.#options.maxConnectionsPerHost }, 'host upgrade refused: maxConnectionsPerHost reached');
      return rejectUpgrade(socket, 429, 1_000);
    }
    this.#authenticated?.(req.socket);
    try {
      // Without verifyClient, ws completes the handshake synchronously: the counts checked above
      // cannot be overtaken by another upgrade before this one is counted in #accept.
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        if (this.#closing !== undefined) {
          ws.on('error', () => {});
          ws.terminate();
          return;
        }
        this.#accept(ws, admitted, socket, remote);
      });
    } catch (error) {
      // e.g. handleUpgrade called twice for one socket — a wiring bug, not the peer's doing.
      this.#options.logger.error({ err: error }, 'host upgrade failed');
      socket.destroy();
    }
  }

  /**
   * Close every session with 1001 (GOING_AWAY); every pending call settles 69 at once and every
   * session timer is cleared. Waits up to `closeWaitMs` for peers to complete the close handshake,
   * then terminates the rest. Resolves when all sockets have closed (bounded). Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /**
   * Close (1008 "token revoked", pending calls → 69) every session admitted with a token principal
   * for which `isCurrent` is now false — after a config reload removed or rotated its token.
   * Loopback dev sessions are kept. Returns the number of sessions closed.
   */
  revoke(isCurrent: (principal: Principal) => boolean): number {
    let closed = 0;
    for (const [session, principal] of this.#sessions) {
      if (principal !== undefined && !isCurrent(principal)) {
        this.#options.logger.warn({ host: principal.name, remote: session.remote }, 'host token revoked: closing its session');
        session.revoke();
        closed++;
      }
    }
    return closed;
  }

  #accept(ws: WebSocket, admitted: UpgradeIdentity, socket: Duplex, remote: string | undefined): void {
    const session = new HostSession({
      ws,
      socket, // the socket ws writes to: lets the session coalesce the frames of one tick
      identity: admitted.identity,
      options: this.#options.session,
      router: this.#router,
      reserved: this.#reserved,
      remote,
    });
    this.#sessions.set(session, admitted.principal);
    const name = admitted.principal?.name;
    if (name !== undefined) this.#perHost.set(name, (this.#perHost.get(name) ?? 0) + 1);
    void session.closed.then(() => {
      this.#sessions.delete(session);
      if (name === undefined) return;
      const left = (this.#perHost.get(name) ?? 1) - 1;
      if (left > 0) this.#perHost.set(name, left);
      else this.#perHost.delete(name);
    });
  }

  async #shutdown(): Promise<void> {
    const sessions = [...this.#sessions.keys()];
    for (const session of sessions) session.shutdown();
    const all = Promise.all(sessions.map((s) => s.closed)).then(() => undefined);
    await pTimeout(all, { milliseconds: this.#options.closeWaitMs, message: false });
    for (const session of sessions) session.terminate();
    await pTimeout(all, { milliseconds: TERMINATE_WAIT_MS, message: false });
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
