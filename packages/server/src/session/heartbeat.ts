/**
 * Heartbeat of one host connection (DESIGN §6): a ws ping every `intervalMs`; when the next ping is
 * due and no pong arrived since the previous one, the host is declared lost. A host that goes silent
 * (half-open, no FIN) is thus detected within 2 × `intervalMs` of its last pong. While the server
 * itself does not read the socket (`ws.isPaused`: frames of this host wait for the server's work)
 * the host is not judged: its pongs wait unread. Nor at the beat itself: timers run before the event
 * loop reads sockets, so after this process stalled (a busy CPU, a long GC) a pong that arrived
 * meanwhile is still unread then; the verdict waits for that turn's reads (`setImmediate`).
 */
import { WebSocket } from 'ws';

export class Heartbeat {
  readonly #ws: WebSocket;
  readonly #intervalMs: number;
  readonly #onLost: () => void;
  #timer: NodeJS.Timeout | undefined;
  #answered = true;
  #lastPongAt: number | undefined;

  /**
   * @param ws the host's socket (pongs are reported through {@link Heartbeat.pong})
   * @param intervalMs ping interval, ms (ToolwireServerOptions.heartbeatMs, default 10000)
   * @param onLost called once when a pong is missed; the heartbeat has stopped by then
   */
  constructor(ws: WebSocket, intervalMs: number, onLost: () => void) {
    this.#ws = ws;
    this.#intervalMs = intervalMs;
    this.#onLost = onLost;
  }

  /** Start pinging. Idempotent. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#answered = true;
    this.#timer = setInterval(() => this.#beat(), this.#intervalMs);
  }

  /** Record a pong (also: reading resumed after a pause, so the next beat does not judge pongs still unread). */
  pong(): void {
    this.#answered = true;
  }

  /** The host answered a ping: {@link pong}, and remember when (see {@link lastPongAt}). */
  heard(): void {
    this.#answered = true;
    this.#lastPongAt = Date.now();
  }

  /** When the host last answered a ping, ms since the epoch; `undefined` before its first pong. */
  get lastPongAt(): number | undefined {
    return this.#lastPongAt;
  }

  /** Stop pinging and clear the timer. Idempotent. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    if (this.#ws.isPaused) return; // judged again at the first beat after reading resumes (see `pong`)
    if (this.#answered) this.#ping();
    else setImmediate(() => this.#judge()); // after this turn's socket reads
  }

  /** No pong by the beat, and none read since: the host is lost. */
  #judge(): void {
    if (this.#timer === undefined || this.#ws.isPaused) return; // stopped, or judged after reading resumes
    if (this.#answered) {
      this.#ping();
      return;
    }
    this.stop();
    this.#onLost();
  }

  #ping(): void {
    this.#answered = false;
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    try {
      this.#ws.ping();
    } catch {
      // The socket is going away; its 'close' event settles the session.
    }
  }
}
