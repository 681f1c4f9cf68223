/**
 * Keeps one tool-host connection up (DESIGN §7): dial, and after every loss dial again with
 * exponential backoff and full jitter; the backoff starts over after each `welcome`. Connection
 * lifecycle only — call bookkeeping lives in `calls/`.
 */
import { CloseCode, type WelcomeMessage } from '@toolwire/protocol';
import type { Logger } from '../types.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import type { ServerRefusedError } from '../host/errors.js';
import { HostSocket } from './host-socket.js';
import type { CloseInfo, HostSocketOptions, SessionMessage } from './host-socket-options.js';
import { refusalOf, retryAfterMs } from './refusal.js';

/** Callbacks of the supervisor; each names the connection it is about. */
export interface SupervisorHandlers {
  onWelcome(socket: HostSocket, welcome: WelcomeMessage): void;
  /** `bytes`: the size of the frame that carried `message`. */
  onMessage(socket: HostSocket, message: SessionMessage, bytes: number): void;
  /**
   * A connection ended (or a dial failed). `willRetry`: another dial is scheduled. `refusal`: the
   * server refused the dial for good (401, 403, another 4xx, TLS); no dial follows.
   */
  onDown(socket: HostSocket, info: CloseInfo, willRetry: boolean, refusal?: ServerRefusedError): void;
}

/** Options of the supervisor. */
export interface SupervisorOptions {
  socket: HostSocketOptions;
  /** Backoff bounds, or `false` for a single attempt with no reconnect. */
  reconnect: BackoffOptions | false;
  logger: Logger;
  /** Jitter source in [0, 1); default `Math.random`. */
  random?: () => number;
}

/**
 * Owns the dial/redial loop: at most one connection at a time, one pending reconnect timer at most,
 * none after {@link ConnectionSupervisor.stop}, after a close with 4000 (REPLACED: a newer
 * connection of the same host identity won, and redialing would only kick it off), or after a
 * refusal redialing cannot fix ({@link refusalOf}: HTTP 401, 403, another 4xx, a TLS failure).
 * Network failures and HTTP 5xx are retried with the backoff; an HTTP 429 after its `Retry-After`
 * (at most the backoff's `maxMs`), or the backoff when it names none.
 */
export class ConnectionSupervisor {
  readonly #options: SupervisorOptions;
  readonly #handlers: SupervisorHandlers;
  readonly #backoff: Backoff | undefined;
  #socket: HostSocket | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: SupervisorOptions, handlers: SupervisorHandlers) {
    this.#options = options;
    this.#handlers = handlers;
    this.#backoff = options.reconnect ? new Backoff(options.reconnect, options.random) : undefined;
  }

  /** Dial now. */
  start(): void {
    if (this.#stopped || this.#socket || this.#timer) return;
    this.#dial();
  }

  /** The live connection, once welcomed; `undefined` between connections. */
  get current(): HostSocket | undefined {
    const s = this.#socket;
    return s && s.welcome && s.isOpen ? s : undefined;
  }

  /** Stop for good: no more dials, the current connection closed with 1000. No timer is left. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#socket?.close(CloseCode.NORMAL, 'tool host closing');
  }

  #dial(): void {
    this.#timer = undefined;
    const socket: HostSocket = new HostSocket(this.#options.socket, {
      onWelcome: (welcome) => {
        this.#backoff?.reset();
        this.#handlers.onWelcome(socket, welcome);
      },
      onMessage: (message, bytes) => this.#handlers.onMessage(socket, message, bytes),
      onClose: (info) => {
        if (this.#socket === socket) this.#socket = undefined;
        // Replaced (4000): another connection of this host identity is live; dialing again would
        // replace it in turn, and two hosts sharing a token would flap forever. Stop for good.
        if (info.opened && info.code === CloseCode.REPLACED) this.#stopped = true;
        const refusal = refusalOf(info, this.#options.socket.url, this.#options.socket.ca !== undefined);
        if (refusal) this.#stopped = true;
        const willRetry = !this.#stopped && this.#backoff !== undefined;
        this.#handlers.onDown(socket, info, willRetry, refusal);
        if (willRetry) this.#schedule(this.#backoff && retryAfterMs(info, this.#backoff.maxMs));
      },
    });
    this.#socket = socket;
  }

  /** Dial again after `waitMs` (a 429's Retry-After), else after the next backoff delay. */
  #schedule(waitMs?: number): void {
    if (this.#stopped || this.#timer || !this.#backoff) return;
    const delay = waitMs ?? this.#backoff.next();
    this.#options.logger.debug({ delayMs: delay, attempt: this.#backoff.attempt }, 'toolwire: reconnecting');
    this.#timer = setTimeout(() => this.#dial(), delay);
  }
}
