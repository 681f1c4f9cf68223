/**
 * One WebSocket connection of a tool host to the server (DESIGN §5): dial with the bearer token and
 * the toolwire subprotocol, send `hello`, wait for `welcome`, watch the server's heartbeat, decode
 * frames. Knows nothing about tools or calls; reconnecting is the supervisor's job.
 */
import {
  CloseCode,
  type HostMessage,
  SUBPROTOCOLS,
  TickCoalescer,
  TurnCoalescer,
  type WelcomeMessage,
  decodeServerMessage,
  versionOfSubprotocol,
  encodeMessage,
} from '@toolwire/protocol';
import pTimeout from 'p-timeout';
import { WebSocket } from 'ws';
import { type CloseInfo, type HostSocketHandlers, type HostSocketOptions, MAX_REASON_BYTES } from './host-socket-options.js';
import { unmaskedIsSafe, zeroMask } from './masking.js';
import { displayUrl } from './refusal.js';

/** The message of the error `ws` emits when its `handshakeTimeout` passes with no upgrade answer. */
const HANDSHAKE_TIMED_OUT = 'Opening handshake has timed out';

/**
 * The server is presumed dead after `2 × heartbeatMs + min(heartbeatMs, 1000)` ms without a ping
 * or a frame (DESIGN §6: dead within 2 × interval, plus a margin for scheduling).
 */
export function silenceLimitMs(heartbeatMs: number): number {
  return 2 * heartbeatMs + Math.min(heartbeatMs, 1000);
}

/**
 * One dial: `new` connects at once (headers `Authorization: Bearer <token>`, subprotocol
 * `toolwire.v1`); `hello` goes out on open; no `welcome` within `welcomeTimeoutMs`, or no ping/frame
 * for {@link silenceLimitMs} after it, terminates the socket. `onClose` always follows, exactly once.
 */
export class HostSocket {
  readonly #ws: WebSocket;
  readonly #options: HostSocketOptions;
  readonly #handlers: HostSocketHandlers;
  readonly #closed: Promise<void>;
  #welcome: WelcomeMessage | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The silence watchdog's pending verdict (see {@link #armWatchdog}). */
  #verdict: NodeJS.Immediate | undefined;
  #opened = false;
  #status: number | undefined;
  #retryAfter: string | undefined;
  #challenged = false;
  #body: string | undefined;
  #bodyGuard: NodeJS.Timeout | undefined;
  #error: Error | undefined;
  /** When the server was last heard from after `welcome` (a ping or a frame), `performance.now()` ms. */
  #heardAt = 0;
  /** Frames written in one turn of the event loop leave in one syscall (set once the upgrade hands over the socket). */
  #coalescer: TurnCoalescer | undefined;
  /**
   * Frames written while a server frame is handled (the answers of calls answered at once, their
   * output): the first goes out at once, the rest of the tick's leave together at its end. The
   * frames of one read are all handled in that tick, so a burst still leaves in few syscalls, and
   * a lone call's result is not held until the turn's end (its round trip waits on it).
   */
  #tick: TickCoalescer | undefined;
  /** A server frame is being handled (see {@link #tick}). */
  #inFrame = false;

  constructor(options: HostSocketOptions, handlers: HostSocketHandlers) {
    this.#options = options;
    this.#handlers = handlers;
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    this.#ws = new WebSocket(options.url, [...SUBPROTOCOLS], {
      headers,
      maxPayload: options.maxPayload,
      handshakeTimeout: options.welcomeTimeoutMs,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(unmaskedIsSafe(options.url) ? { generateMask: zeroMask } : {}),
    });
    const ws = this.#ws;
    ws.on('error', (error) => {
      // ws says only "Opening handshake has timed out": name the server and the bound, as the other dial failures do.
      if (error.message === HANDSHAKE_TIMED_OUT) {
        error = new Error(
          `the server ${displayUrl(options.url)} did not answer the WebSocket upgrade within ${options.welcomeTimeoutMs} ms (is that address a toolwire server?)`,
        );
      }
      this.#error ??= error;
    });
    this.#closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.#coalescer?.close();
        clearTimeout(this.#timer);
        clearImmediate(this.#verdict);
        clearTimeout(this.#bodyGuard);
        const info: CloseInfo = { opened: this.#opened, welcomed: this.#welcome !== undefined, code, reason: reason.toString('utf8') };
        if (this.#status !== undefined) info.status = this.#status;
        if (this.#retryAfter !== undefined) info.retryAfter = this.#retryAfter;
        if (this.#challenged) info.challenged = true;
        if (this.#body !== undefined && this.#body !== '') info.body = this.#body;
        if (this.#error !== undefined) info.error = this.#error;
        resolve();
        this.#handlers.onClose(info);
      });
    });
    ws.on('unexpected-response', (_req, res) => {
      this.#status = res.statusCode;
      const retryAfter = res.headers['retry-after'];
      if (typeof retryAfter === 'string') this.#retryAfter = retryAfter.slice(0, 64);
      this.#challenged = res.headers['www-authenticate'] !== undefined;
      this.#error = new Error(`server refused the upgrade with HTTP ${res.statusCode}${res.statusCode === 401 ? ' (token not accepted)' : ''}`);
      // Keep the first line of a short body (a 429's reason); the connection ends at the body's end,
      // at MAX_REASON_BYTES, or at an error — whichever is first — and never waits past the handshake timeout.
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(this.#bodyGuard);
        const line = Buffer.concat(chunks).subarray(0, MAX_REASON_BYTES).toString('utf8').split(/\r?\n/, 1)[0]!.trim();
        // eslint-disable-next-line no-control-regex -- a server's text must not carry terminal escapes into our log
        this.#body = line.replace(/[\u0000-\u001f\u007f]/g, '?');
        if (this.#body !== '') this.#error = new Error(`server refused the upgrade with HTTP ${res.statusCode}: ${this.#body.slice(0, 200)}`);
        ws.terminate();
      };
      this.#bodyGuard = setTimeout(finish, Math.min(options.welcomeTimeoutMs, 1_000));
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_REASON_BYTES) finish();
      });
      res.on('end', finish);
      res.on('error', finish);
      res.on('close', finish);
    });
    ws.on('upgrade', (res) => {
      this.#coalescer = new TurnCoalescer(res.socket);
      this.#tick = new TickCoalescer(res.socket);
    });
    ws.on('open', () => this.#onOpen());
    ws.on('message', (data, isBinary) => this.#onFrame(data as Buffer, isBinary));
    ws.on('ping', () => {
      if (this.#welcome) this.#heardAt = performance.now();
    });
  }

  /** The wire protocol version the server chose at the upgrade (1 before the upgrade, or from a server that named none). */
  get protocol(): number {
    return versionOfSubprotocol(this.#ws.protocol) ?? 1;
  }

  /** The `welcome` of this connection, once received. */
  get welcome(): WelcomeMessage | undefined {
    return this.#welcome;
  }

  /** True while frames can be sent. */
  get isOpen(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  /** Send one message; `false` (nothing sent) when the socket is not open. */
  send(message: HostMessage): boolean {
    if (!this.isOpen) return false;
    const text = encodeMessage(message);
    this.#hold(text.length);
    this.#ws.send(text, (error) => {
      if (error) this.#options.logger.debug({ err: error }, 'toolwire: send failed');
    });
    return true;
  }

  /**
   * Send one already encoded message: its JSON text as a text frame, or a binary `output` frame
   * (protocol 2); `false` (nothing sent, `sent` not called) when the socket is not open. `sent`,
   * if given, is called once the frame is written (or its write failed): its memory is free then.
   */
  sendFrame(frame: string | Uint8Array, sent?: () => void): boolean {
    if (!this.isOpen) return false;
    this.#hold(frame.length);
    // Without `sent`, no write callback: a write that fails errors the socket and the connection
    // ends through ws 'close'. A callback makes Node's stream schedule a tick and copy its buffered
    // writes for every send.
    if (sent === undefined) this.#ws.send(frame);
    else
      this.#ws.send(frame, (error) => {
        this.#onSent(error);
        sent();
      });
    return true;
  }

  /** Before writing a frame of about `bytes` bytes: let the coalescer of the current context hold it. */
  #hold(bytes: number): void {
    (this.#inFrame ? this.#tick : this.#coalescer)?.hold(bytes);
  }

  /** Logs a send that failed (the callback of a send with `sent`). */
  readonly #onSent = (error?: Error): void => {
    if (error) this.#options.logger.debug({ err: error }, 'toolwire: send failed');
  };

  /** Close with `code`; wait at most `closeWaitMs` for the server's answer, then terminate. */
  async close(code: number = CloseCode.NORMAL, reason = ''): Promise<void> {
    if (this.#ws.readyState !== WebSocket.CLOSED) this.#ws.close(code, reason);
    await pTimeout(this.#closed, {
      milliseconds: this.#options.closeWaitMs,
      fallback: () => {
        this.#ws.terminate();
        return this.#closed;
      },
    });
  }

  /** Drop the connection at once (no close handshake). */
  terminate(): void {
    this.#ws.terminate();
  }

  #onOpen(): void {
    this.#opened = true;
    // The version the server picked among those offered (DESIGN §5, versions): hello says it back.
    this.send({ ...this.#options.hello, protocol: this.protocol });
    this.#timer = setTimeout(() => {
      this.#options.logger.warn({ ms: this.#options.welcomeTimeoutMs }, 'toolwire: no welcome from the server in time; reconnecting');
      this.#error ??= new Error(`no welcome within ${this.#options.welcomeTimeoutMs} ms`);
      this.#ws.terminate();
    }, this.#options.welcomeTimeoutMs);
  }

  /**
   * The silence watchdog: a ping or a frame sets {@link #heardAt} (a number, not a timer refresh
   * per frame); when the timer fires it waits out what is left of the limit since then, or ends
   * the connection when the limit has passed. Not at the timer itself: after a stall of this
   * process (a blocking tool, a long GC) timers run before the event loop reads its sockets, so a
   * ping that came meanwhile is still unread then; the verdict waits for that turn's reads
   * (`setImmediate`), as the server's heartbeat does (packages/server/src/session/heartbeat.ts).
   */
  #armWatchdog(heartbeatMs: number): void {
    clearTimeout(this.#timer);
    const limit = silenceLimitMs(heartbeatMs);
    this.#heardAt = performance.now();
    const check = (final: boolean): void => {
      this.#verdict = undefined;
      const left = this.#heardAt + limit - performance.now();
      if (left > 0) {
        this.#timer = setTimeout(check, Math.ceil(left), false);
        return;
      }
      if (!final) {
        this.#verdict = setImmediate(check, true); // after this turn's socket reads
        return;
      }
      this.#options.logger.warn({ ms: limit }, 'toolwire: no heartbeat from the server; reconnecting');
      this.#error ??= new Error(`heartbeat lost: no ping within ${limit} ms`);
      this.#ws.terminate();
    };
    this.#timer = setTimeout(check, limit, false);
  }

  #onFrame(data: Buffer, isBinary: boolean): void {
    const decoded = decodeServerMessage(data, isBinary);
    if (!decoded.ok) {
      const { error } = decoded;
      this.#options.logger.warn({ reason: error.reason, id: error.id }, 'toolwire: bad frame from the server');
      if (error.fatal) void this.close(error.closeCode, error.reason.slice(0, 60));
      return;
    }
    const message = decoded.message;
    if (message.type === 'welcome') {
      if (this.#welcome) {
        this.#options.logger.warn('toolwire: second welcome ignored');
        return;
      }
      this.#welcome = message;
      this.#armWatchdog(message.heartbeatMs);
      this.#handlers.onWelcome(message);
      return;
    }
    if (!this.#welcome) {
      this.#options.logger.warn({ type: message.type }, 'toolwire: message before welcome ignored');
      return;
    }
    this.#heardAt = performance.now();
    this.#inFrame = true;
    try {
      this.#handlers.onMessage(message, data.length);
    } finally {
      this.#inFrame = false;
    }
  }
}
