/**
 * The tool-host WebSocket endpoint (DESIGN §5): authenticates each HTTP upgrade, completes the
 * handshake with `ws` (noServer, JSON text only), and runs one {@link HostSession} per connection.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { SUBPROTOCOL } from '@toolwire/protocol';
import pTimeout from 'p-timeout';
import { type WebSocket, WebSocketServer } from 'ws';
import type { TokenTable } from '../auth/tokens.js';
import type { ResolvedOptions } from '../options.js';
import type { Router } from '../router/router.js';
import type { HostIdentity } from '../session/hello.js';
import { HostSession } from '../session/host-session.js';
import { rejectUpgrade } from './http-reject.js';
import { identifyHost } from './upgrade-auth.js';

/** Bound on the wait for sockets destroyed by `terminate()` to report 'close' during `close()`, ms. */
const TERMINATE_WAIT_MS = 1_000;

/** Dependencies of the endpoint. */
export interface HostEndpointDeps {
  options: ResolvedOptions;
  tokens: TokenTable;
  router: Router;
}

/**
 * Accepts tool-host connections. Wire it to an `http.Server`:
 * `server.on('upgrade', (req, socket, head) => endpoint.handleUpgrade(req, socket, head))`.
 */
export class HostEndpoint {
  readonly #options: ResolvedOptions;
  readonly #tokens: TokenTable;
  readonly #router: Router;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<HostSession>();
  #closing: Promise<void> | undefined;

  constructor(deps: HostEndpointDeps) {
    this.#options = deps.options;
    this.#tokens = deps.tokens;
    this.#router = deps.router;
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#options.maxPayload,
      perMessageDeflate: false,
      clientTracking: false,
      // Select `toolwire.v1` when offered; otherwise answer without a subprotocol.
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    });
    this.#wss.on('error', (error) => this.#options.logger.error({ err: error }, 'host endpoint error'));
  }

  /** Connections currently open (including those that have not sent `hello` yet). */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /**
   * Handle an `http.Server` `'upgrade'`. Auth: `Authorization: Bearer <host token>` → host identity;
   * otherwise HTTP 401 with no detail, socket destroyed, no upgrade. In `options.loopbackDev` mode a
   * tokenless upgrade from 127.0.0.1/::1 may name itself in `hello.name` (default `local`; a
   * configured host identity may not be claimed that way). After `close()`: HTTP 503. Never throws.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (error) => this.#options.logger.debug({ err: error }, 'host upgrade socket error'));
    if (this.#closing !== undefined) return rejectUpgrade(socket, 503);
    const identity = identifyHost(req, this.#tokens, this.#options.loopbackDev);
    if (identity === undefined) {
      this.#options.logger.warn({ remote: req.socket.remoteAddress }, 'host upgrade refused: not authenticated');
      return rejectUpgrade(socket, 401);
    }
    try {
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        if (this.#closing !== undefined) {
          ws.on('error', () => {});
          ws.terminate();
          return;
        }
        this.#accept(ws, identity);
      });
    } catch (error) {
      // e.g. handleUpgrade called twice for one socket — a wiring bug, not the peer's doing.
      this.#options.logger.error({ err: error }, 'host upgrade failed');
      socket.destroy();
    }
  }

  /**
   * Close every session with 1001 (GOING_AWAY); every pending call settles 69 at once and every
   * session timer is cleared. Waits up to `cancelGraceMs` for peers to complete the close handshake,
   * then terminates the rest. Resolves when all sockets have closed (bounded). Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  #accept(ws: WebSocket, identity: HostIdentity): void {
    const session = new HostSession({
      ws,
      identity,
      options: this.#options,
      router: this.#router,
      reserved: (name) => this.#tokens.hasHost(name),
    });
    this.#sessions.add(session);
    void session.closed.then(() => this.#sessions.delete(session));
  }

  async #shutdown(): Promise<void> {
    const sessions = [...this.#sessions];
    for (const session of sessions) session.shutdown();
    const all = Promise.all(sessions.map((s) => s.closed)).then(() => undefined);
    await pTimeout(all, { milliseconds: this.#options.cancelGraceMs, message: false });
    for (const session of sessions) session.terminate();
    await pTimeout(all, { milliseconds: TERMINATE_WAIT_MS, message: false });
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
