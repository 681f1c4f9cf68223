/**
 * Bounds on connections that have not authenticated yet (issue 11 §2). Every TCP connection the
 * server accepts starts here, counted in total and per address (IPv4 address or IPv6 /64, as the
 * failed-authentication limiter groups them). It leaves when a request on it passes authentication
 * (a host upgrade admitted, an MCP request with a valid caller token) — then it is authenticated
 * for its whole life, until idle — or when it closes.
 *
 * - Caps: a new connection over `maxPerAddress` closes its address's oldest unauthenticated
 *   connection; over `maxConnections`, the oldest connection of the address holding the most
 *   (`groups.ts`). Closing the oldest, not the newest, keeps the door open to a legitimate client
 *   that shares nothing with the attacker: a slow client holds its slot for seconds, a legitimate
 *   one authenticates within a round trip; and closing from the largest address first means a
 *   slowloris from a few addresses pushes out its own sockets, not a caller's single one, however
 *   fast it dials. (Peers behind one address share its slots; a flood from more addresses than
 *   `maxConnections` is beyond what per-address accounting can separate.)
 * - Time: a connection still unauthenticated `timeoutMs` after it was accepted is closed, whatever
 *   it is doing (TLS handshake, slow headers, idle keep-alive after a `/healthz`, a refused body).
 * - Bodies: once an unauthenticated request has been answered (401, 403, 404, 429, …), its socket is
 *   closed if the body has not fully arrived; the body is never read.
 *
 * Authenticated connections are never counted or closed here, so they always have room: the caps
 * are sized far below the process's open-files limit (`fd-limit.ts`). One timer (unref'd), for the
 * oldest connection, runs while any connection is unauthenticated and at most `timeoutMs` after the
 * last one went; `close()` clears it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import { addressKey } from '../auth/limiter.js';
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { Logger } from '../options.js';
import { AddressGroups } from './groups.js';

/** What the guard reads (`ToolwireServerOptions.maxPreAuthConnections`, `maxPreAuthPerAddress`, `preAuthTimeoutMs`). */
export interface PreAuthOptions {
  /** Unauthenticated connections at most; over → the oldest is closed. */
  maxConnections: number;
  /** Unauthenticated connections per address (IPv4, IPv6 /64) at most; over → that address's oldest is closed. */
  maxPerAddress: number;
  /** Time from accept to authentication, ms; over → closed. */
  timeoutMs: number;
  logger: Logger;
  /** Clock, ms. Default `Date.now`. */
  now?: () => number;
}

/** Counts since the guard was made. */
export interface PreAuthStats {
  /** Unauthenticated connections open now. */
  pending: number;
  /** Connections accepted. */
  accepted: number;
  /** Connections that authenticated. */
  authenticated: number;
  /** Closed to make room (per-address or total cap). */
  evicted: number;
  /** Closed at `timeoutMs`. */
  timedOut: number;
  /** Closed after an unauthenticated request was answered before its body arrived. */
  bodiesRefused: number;
}

interface Entry {
  /** The TCP socket (also under TLS): the entry's key. */
  socket: Socket;
  /** The address group the per-address cap counts. */
  group: string;
  /** Under TLS, `address|port` until the handshake completes; else `undefined`. */
  tuple: string | undefined;
  deadline: number;
}

/** Minimum time between two "cap reached" warnings, ms (an attack would otherwise flood the log). */
const WARN_EVERY_MS = 10_000;

/** `address|port` of a connection: the same for a TLS socket and the TCP socket under it. */
const tupleOf = (socket: Socket): string => `${socket.remoteAddress}|${String(socket.remotePort)}`;

/** Pre-authentication accounting of one server's connections. */
export class PreAuthGuard {
  readonly #options: Required<PreAuthOptions>;
  /** Unauthenticated connections by TCP socket, oldest first (Map order = accept order); renewed every {@link RENEW_AFTER_ADDS} accepts (`churn.ts`). */
  #pending = new Map<Socket, Entry>();
  #adds = 0;
  /** The same entries by address group. */
  readonly #groups = new AddressGroups<Entry>();
  /**
   * Under TLS ({@link listenTo} a TLS server): the entries whose handshake has not completed, by
   * `address|port` (how the TLS socket, at `'secureConnection'`, finds its TCP socket's entry), and
   * the TLS sockets of the entries whose handshake has. Empty without TLS.
   */
  #handshaking = new Map<string, Entry>();
  readonly #byTlsSocket = new WeakMap<Socket, Entry>();
  #tls = false;
  /** Every pending socket's `'close'` listener (one function for all; `this` is the socket). */
  readonly #onClose: (this: Socket) => void;
  readonly #stats = { accepted: 0, authenticated: 0, evicted: 0, timedOut: 0, bodiesRefused: 0 };
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #lastWarn = -Infinity;
  #evictedSinceWarn = 0;

  constructor(options: PreAuthOptions) {
    this.#options = { now: Date.now, ...options };
    const closed = (socket: Socket): void => this.#forget(this.#pending.get(socket));
    this.#onClose = function (this: Socket): void {
      closed(this);
    };
  }

  /**
   * Count every connection `server` accepts (its `'connection'` event: the TCP socket, also under
   * TLS). For a TLS server the guard also hears `'secureConnection'`, before node:http does, so
   * that a request's TLS socket finds the entry of the TCP socket under it.
   */
  listenTo(server: Server): void {
    server.on('connection', (socket: Socket) => this.accept(socket));
    if (!(server instanceof TlsServer)) return;
    this.#tls = true;
    server.prependListener('secureConnection', (socket: TLSSocket) => this.#secured(socket));
  }

  stats(): PreAuthStats {
    return { pending: this.#pending.size, ...this.#stats };
  }

  /** A connection was accepted (the server's `'connection'` event: the TCP socket, also under TLS; see {@link listenTo}). */
  accept(socket: Socket): void {
    const address = socket.remoteAddress;
    if (this.#closed || address === undefined) {
      socket.destroy(); // closing, or already reset by the peer
      return;
    }
    this.#stats.accepted++;
    if (++this.#adds === RENEW_AFTER_ADDS) {
      this.#adds = 0;
      this.#pending = new Map(this.#pending);
      if (this.#tls) this.#handshaking = new Map(this.#handshaking);
    }
    const group = addressKey(address);
    const tuple = this.#tls ? tupleOf(socket) : undefined;
    const entry: Entry = { socket, group, tuple, deadline: this.#options.now() + this.#options.timeoutMs };
    this.#pending.set(socket, entry);
    this.#groups.add(entry);
    if (tuple !== undefined) this.#handshaking.set(tuple, entry);
    socket.on('close', this.#onClose); // 'close' comes once: no `once` wrapper needed
    // The new entry is the newest of its address and overall: neither pick below is the new one
    // while an older connection exists to close.
    if (this.#groups.sizeOf(group) > this.#options.maxPerAddress) this.#evict(this.#groups.oldestOf(group)!);
    if (this.#pending.size > this.#options.maxConnections) this.#evict(this.#groups.largestOldest()!);
    this.#arm();
  }

  /** A request on `socket` (the TCP or TLS socket) passed authentication: it is no longer counted or timed. */
  authenticated(socket: Socket): void {
    const entry = this.#entryOf(socket);
    if (entry === undefined) return; // already authenticated, or not accepted through this guard
    this.#stats.authenticated++;
    entry.socket.off('close', this.#onClose);
    this.#forget(entry);
  }

  /** True while `socket` has not authenticated. */
  isPending(socket: Socket): boolean {
    return this.#entryOf(socket) !== undefined;
  }

  /**
   * Watch one request: when its response has been sent and the connection is still unauthenticated
   * while the request body has not fully arrived, close the connection (the body is not read).
   */
  watch(req: IncomingMessage, res: ServerResponse): void {
    if (!this.isPending(req.socket)) return;
    res.once('finish', () => {
      if (req.complete || !this.isPending(req.socket)) return;
      this.#stats.bodiesRefused++;
      req.socket.destroy();
    });
  }

  /** Close every unauthenticated connection and stop the timer. Idempotent. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const entry of [...this.#pending.values()]) this.#evict(entry, false);
  }

  /** Close `entry`'s connection to make room (`counted`: an eviction, not a shutdown). */
  #evict(entry: Entry, counted = true): void {
    this.#forget(entry);
    entry.socket.destroy();
    if (!counted) return;
    this.#stats.evicted++;
    this.#evictedSinceWarn++;
    const now = this.#options.now();
    if (now - this.#lastWarn >= WARN_EVERY_MS) {
      this.#options.logger.warn(
        { evicted: this.#evictedSinceWarn, maxPreAuthConnections: this.#options.maxConnections, maxPreAuthPerAddress: this.#options.maxPerAddress },
        'unauthenticated connections at their cap: closing the oldest of the address holding the most',
      );
      this.#lastWarn = now;
      this.#evictedSinceWarn = 0;
    }
  }

  /** The pending entry of `socket`: its own, or under TLS that of the TCP socket under it. */
  #entryOf(socket: Socket): Entry | undefined {
    const entry = this.#pending.get(socket) ?? this.#byTlsSocket.get(socket);
    return entry !== undefined && this.#pending.get(entry.socket) === entry ? entry : undefined;
  }

  /** The TLS handshake of a pending connection completed: its TLS socket now finds the entry. */
  #secured(socket: TLSSocket): void {
    const tuple = tupleOf(socket);
    const entry = this.#handshaking.get(tuple);
    if (entry === undefined) return; // authenticated, closed, or reset before its address could be read
    this.#handshaking.delete(tuple);
    entry.tuple = undefined;
    this.#byTlsSocket.set(socket, entry);
  }

  #forget(entry: Entry | undefined): void {
    if (entry === undefined || this.#pending.get(entry.socket) !== entry) return;
    this.#pending.delete(entry.socket);
    this.#groups.remove(entry);
    if (entry.tuple !== undefined && this.#handshaking.get(entry.tuple) === entry) this.#handshaking.delete(entry.tuple);
  }

  /**
   * Keep one timer, for the oldest connection's deadline (every entry has the same timeout, so Map
   * order is deadline order). It is left to run when the connections it was set for go: firing
   * early, it finds nothing expired and is set again for the oldest, or not at all when none is
   * left; so a stream of short connections does not set and clear a timer for each.
   */
  #arm(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const oldest = this.#pending.values().next().value;
    if (oldest === undefined) return;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, oldest.deadline - this.#options.now()));
    this.#timer.unref();
  }

  #expire(): void {
    this.#timer = undefined;
    const now = this.#options.now();
    for (const entry of this.#pending.values()) {
      if (entry.deadline > now) break;
      this.#stats.timedOut++;
      this.#forget(entry);
      entry.socket.destroy();
    }
    if (this.#timer === undefined) this.#arm();
  }
}
