/**
 * One tool host's WebSocket connection (DESIGN §5, §6): `hello` → `welcome` → `advertise` →
 * `advertised`, calls and results, heartbeat, and every way the connection ends. Nothing a host sends
 * makes this throw; every way of ending settles every pending call exactly once.
 */
import {
  CloseCode,
  type Decoded,
  decodeOutputFrame,
  encodeMessage,
  failureCapture,
  fromWire,
  type HelloMessage,
  type OutputFrame,
  type ServerMessage,
  TickCoalescer,
  versionOfSubprotocol,
  type WireError,
} from '@toolwire/protocol';
import { type RawData, WebSocket } from 'ws';
import type { Logger } from '../options.js';
import { IdentityTakenError } from '../router/claims.js';
import type { HostLink } from '../router/host-link.js';
import type { RoutedCall, RoutedCapture } from '../seam.js';
import { normalizeDeadline, refuseOverload } from './admission.js';
import { closeReasonText, peerReasonText, wsErrorCloseCode } from './close-codes.js';
import * as endings from './endings.js';
import type { Ending } from './endings.js';
import { Heartbeat } from './heartbeat.js';
import { acceptHello, type HostIdentity, welcomeFor } from './hello.js';
import { Advertising } from './advertising.js';
import { Flow, FrameInbox, MAX_WAITING_FRAMES } from './inbox.js';
import { LogLimiter } from './log-limiter.js';
import { PendingCalls } from './pending-calls.js';
import { isStopped } from './stop-watch.js';
import type { HostFrame } from '../worker/jobs.js';
import type { RefusedFrameKind, SessionCounters } from '../observe/counters.js';
import type { HostSessionDeps, SessionOptions } from './session-options.js';

export type { HostSessionDeps, SessionOptions } from './session-options.js';

/** `claiming`: hello accepted, waiting for the cluster's identity lease (`Router.claim`) before binding. */
type State = 'hello' | 'claiming' | 'open' | 'closed';

/** Exhaustiveness check of a message switch: a new message type is a compile error, not silently ignored. */
function assertNever(value: never): never {
  throw new TypeError(`unhandled message ${JSON.stringify(value)}`);
}

/** A binary frame of a protocol-2 session: an `output` chunk (its bytes a view of `data`). */
function binaryFrame(data: Buffer): Decoded<HostFrame> {
  const decoded = decodeOutputFrame(data);
  if (!decoded.ok) return decoded;
  const frame: OutputFrame = decoded.message;
  return { ok: true, message: { type: 'chunk', id: frame.id, stream: frame.stream, seq: frame.seq, bytes: frame.bytes } };
}

/**
 * A host connection from upgrade to close. Created by the endpoint right after the upgrade; binds
 * itself to the router on a valid `hello` and unbinds when it ends.
 */
export class HostSession implements HostLink {
  /** When the connection was upgraded. */
  readonly connectedAt = new Date();
  /** The peer's address, when the endpoint gave it (for logs). */
  readonly remote: string | undefined;
  /** Resolves when the socket has closed (ws `'close'`). Never rejects. */
  readonly closed: Promise<void>;
  readonly #ws: WebSocket;
  readonly #identity: HostIdentity;
  readonly #options: SessionOptions;
  readonly #router: HostSessionDeps['router'];
  readonly #reserved: (name: string) => boolean;
  readonly #logger: Logger;
  /** Warnings about this host, rate-limited. */
  readonly #log: LogLimiter;
  readonly #inbox: FrameInbox;
  readonly #advertising: Advertising;
  readonly #pending: PendingCalls;
  readonly #heartbeat: Heartbeat;
  readonly #coalescer: TickCoalescer | undefined;
  readonly #counters: SessionCounters;
  #helloTimer: NodeJS.Timeout | undefined;
  #state: State = 'hello';
  #host = '';
  #badFrames = 0;

  constructor(deps: HostSessionDeps) {
    const { ws, options } = deps;
    this.#ws = ws;
    this.remote = deps.remote;
    this.#identity = deps.identity;
    // The version the upgrade negotiated (the subprotocol ws accepted); a session built without one is v1.
    this.protocol = versionOfSubprotocol(ws.protocol) ?? 1;
    this.#options = options;
    this.#router = deps.router;
    this.#reserved = deps.reserved ?? (() => false);
    this.#logger = options.logger;
    this.#counters = options.counters;
    this.#log = new LogLimiter(options.logger, options);
    const flow = new Flow(ws, () => this.#heartbeat.pong());
    this.#inbox = new FrameInbox({
      decode: (data, isBinary) => (isBinary && this.protocol >= 2 ? binaryFrame(data) : options.decoder.decode(data, isBinary)),
      deliver: (frame) => this.#guard(this.#onFrame, frame),
      overflow: () => this.#guard(() => this.#violation(CloseCode.POLICY_VIOLATION, `more than ${MAX_WAITING_FRAMES} frames waiting`, 'flood')),
      flow,
    });
    this.#advertising = new Advertising({
      advertise: (prepared) => this.#router.advertise(this, prepared),
      reply: (advertised) => this.#guard(() => this.#send(advertised)),
      warn: (fields, msg) => this.#log.warn({ host: this.#host, ...fields }, msg),
      failed: (error) => this.#internalError(error),
      maxToolsPerHost: options.maxToolsPerHost,
      flow,
    });
    this.#coalescer = deps.socket ? new TickCoalescer(deps.socket) : undefined;
    this.#host = deps.identity.kind === 'token' ? deps.identity.name : '';
    const output = this.protocol >= 2 ? { settings: options.output, logger: options.logger } : undefined;
    this.#pending = new PendingCalls((text) => this.#sendText(text), options.cancelGraceMs, options.newCallId, output);
    this.#heartbeat = new Heartbeat(ws, options.heartbeatMs, () =>
      this.#guard(() => {
        this.#counters.heartbeatTerminations += 1;
        this.#end(endings.lost(this.#host, options.heartbeatMs));
      }),
    );
    let onClosed!: () => void;
    this.closed = new Promise<void>((resolve) => (onClosed = resolve));
    // Listeners attached synchronously, before any event can fire. A bug of ours while handling a
    // frame must not crash the server: it ends this session with 1011 instead.
    ws.on('error', (error) => this.#guard(() => this.#onError(error)));
    ws.on('message', (data, isBinary) => this.#guard(this.#onMessage, data, isBinary)); // no closure per frame
    ws.on('pong', () => this.#heartbeat.heard());
    ws.on('close', (code, reason) => {
      try {
        this.#guard(() => this.#onClose(code, reason));
      } finally {
        onClosed();
      }
    });
    this.#helloTimer = setTimeout(() => this.#guard(() => this.#end(endings.helloTimeout(options.helloTimeoutMs))), options.helloTimeoutMs);
    this.#heartbeat.start();
  }

  /** The wire protocol version of this connection (DESIGN §5, versions): 1 or 2. */
  readonly protocol: number;

  /** The host identity; `''` until a loopback dev host's `hello`. */
  get host(): string {
    return this.#host;
  }

  /** Pending calls. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** True after `hello` until the session ends. */
  get isOpen(): boolean {
    return this.#state === 'open' && this.#ws.readyState === WebSocket.OPEN;
  }

  /**
   * Send `call` to tool `tool` (its bare name). Settles: 130 at once when `call.signal` is already
   * aborted (nothing sent); 69 when the session is not open; 75 when `maxInFlightPerHost` calls are
   * pending or `bufferedAmount` exceeds `maxBufferedBytesPerHost`; 124 at once for a deadline of 0;
   * else as {@link PendingCalls.dispatch}. Never rejects.
   */
  call(tool: string, call: RoutedCall): Promise<RoutedCapture> {
    if (isStopped(call)) return Promise.resolve(failureCapture('cancelled', 'cancelled by stop'));
    if (!this.isOpen) return Promise.resolve(failureCapture('unavailable', `host ${this.#host} is not connected`));
    const options = this.#options;
    const inFlight = this.#pending.size;
    const buffered = this.#ws.bufferedAmount;
    // The load is only made into an object (and a capture) when the call is refused.
    if (inFlight >= options.maxInFlightPerHost || buffered > options.maxBufferedBytesPerHost) {
      const load = { host: this.#host, inFlight, maxInFlight: options.maxInFlightPerHost, buffered, maxBuffered: options.maxBufferedBytesPerHost };
      return Promise.resolve(refuseOverload(load) ?? failureCapture('overloaded', `host ${this.#host} is overloaded; retry later`));
    }
    const deadlineMs = normalizeDeadline(call.deadlineMs, options.deadlineMs);
    if (deadlineMs === 0) return Promise.resolve(failureCapture('deadline', 'deadline of 0 ms exceeded'));
    return this.#pending.dispatch(tool, call, deadlineMs);
  }

  /** Stop the pending call answering `call` (as its signal aborting would: 130). False when none is pending here. */
  stop(call: RoutedCall): boolean {
    return this.#pending.stopCall(call);
  }

  /** Several calls follow in this tick: their frames leave together at its end (`TickCoalescer.holdTick`). */
  holdFrames(): void {
    this.#coalescer?.holdTick();
  }

  /** Add the output bytes received so far of each pending call, by routed call, to `into`. */
  outputBytes(into: Map<RoutedCall, number>): void {
    this.#pending.outputBytes(into);
  }

  /** When the host last answered a heartbeat ping, or `undefined` before its first pong. */
  get lastHeartbeatAt(): Date | undefined {
    const at = this.#heartbeat.lastPongAt;
    return at === undefined ? undefined : new Date(at);
  }

  /** A newer connection of this identity took over: close 4000 (REPLACED), pending calls → 69. Idempotent. */
  replace(): void {
    this.#end(endings.replaced(this.#host));
  }

  /** Its token was removed or rotated (config reload): close 1008 (POLICY_VIOLATION), pending calls → 69. Idempotent. */
  revoke(): void {
    this.#end(endings.revoked(this.#host));
  }

  /** Server shutdown: close 1001 (GOING_AWAY), pending calls → 69. Idempotent. */
  shutdown(): void {
    this.#end(endings.shutdown());
  }

  /** Destroy the socket now (after {@link shutdown} when the peer does not complete the close). */
  terminate(): void {
    this.#end(endings.terminated());
    if (this.#ws.readyState !== WebSocket.CLOSED) this.#ws.terminate();
  }

  // ---- incoming ------------------------------------------------------------------------------

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#state === 'closed') return;
    this.#counters.bytesIn += rawLength(data);
    this.#inbox.push(data, isBinary);
  }

  /** One decoded frame, in arrival order. */
  #onFrame(decoded: Decoded<HostFrame>): void {
    if (this.#state === 'closed') return;
    if (!decoded.ok) return this.#onBadFrame(decoded.error);
    const message = decoded.message;
    if (this.#state === 'hello') {
      if (message.type === 'hello') return this.#onHello(message);
      return this.#violation(CloseCode.PROTOCOL_ERROR, `${message.type} before hello`, 'out_of_order');
    }
    if (this.#state === 'claiming') return this.#violation(CloseCode.PROTOCOL_ERROR, `${message.type} before welcome`);
    switch (message.type) {
      case 'hello':
        return this.#violation(CloseCode.PROTOCOL_ERROR, 'second hello', 'out_of_order');
      case 'advertise':
        return this.#advertising.push(message.prepared);
      case 'result':
        return this.#onCallFrame(message, this.#pending.resolve(message));
      case 'chunk':
        return this.#onCallFrame(message, this.#pending.output(message));
      case 'output': {
        const { id, stream, seq } = message;
        return this.#onCallFrame(message, this.#pending.output({ id, stream, seq, bytes: fromWire(message.data, message.encoding) }));
      }
      case 'progress':
        return this.#onCallFrame(message, this.#pending.progress(message));
      default:
        return assertNever(message);
    }
  }

  #onBadFrame(error: WireError): void {
    if (error.fatal) return this.#violation(error.closeCode, error.reason, 'undecodable');
    // A wrong-shape hello or advertise leaves the host with no session or no tools: close 1002 with
    // the ajv reason (cut to 123 bytes by the ending) so the host learns why.
    if (error.type === 'hello' || error.type === 'advertise') return this.#violation(CloseCode.PROTOCOL_ERROR, error.reason, 'wrong_shape');
    if (this.#state === 'hello') return this.#violation(CloseCode.PROTOCOL_ERROR, `expected hello: ${error.reason}`, 'wrong_shape');
    this.#callFault(error.id, `sent a wrong-shape frame: ${error.reason}`, 'wrong_shape');
  }

  /** A frame broke the protocol for call `id` (if pending): it settles 76, the session stays (DESIGN §6) and counts the frame. */
  #callFault(id: string | undefined, what: string, kind: RefusedFrameKind): void {
    this.#counters.refused(kind);
    this.#badFrames += 1;
    const named = id !== undefined && this.#pending.fail(id, 'protocol', `host ${this.#host} ${what}`);
    this.#log.warn({ host: this.#host, id, settled: named, reason: what }, 'protocol violation by host for one call');
    if (this.#badFrames > this.#options.maxBadFrames) {
      this.#violation(CloseCode.POLICY_VIOLATION, `too many wrong-shape frames (more than ${this.#options.maxBadFrames})`, 'flood');
    }
  }

  #onHello(hello: HelloMessage): void {
    const outcome = acceptHello(hello, this.#identity, this.#reserved, this.protocol);
    if (!outcome.ok) {
      if (outcome.fault) return this.#violation(outcome.closeCode, outcome.reason, 'wrong_shape');
      return this.#end(endings.refused(outcome.closeCode, outcome.reason));
    }
    this.#host = outcome.host;
    const claim = this.#router.claim;
    if (claim === undefined) return this.#open(hello);
    // In a cluster the identity's lease comes first, so no two nodes route to it at once. The hello
    // timer keeps running meanwhile; a claim never rejects on an unreachable cluster (local hosts work).
    this.#state = 'claiming';
    claim(this.#host).then(
      () => this.#guard(() => this.#state === 'claiming' && this.#open(hello)),
      // A newer session of this identity took the lease on another node meanwhile: 4000, never bound.
      (error: unknown) => this.#guard(() => (error instanceof IdentityTakenError ? this.replace() : this.#internalError(error))),
    );
  }

  #open(hello: HelloMessage): void {
    clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
    this.#state = 'open';
    this.#router.bind(this);
    this.#logger.info({ host: this.#host, remote: this.remote, protocol: this.protocol, software: hello.software }, 'host connected');
    this.#send(welcomeFor(this.#host, this.#options, this.protocol));
  }

  /**
   * What became of a call's `result`, live-output chunk or progress (DESIGN §5): `taken` false — an
   * unknown or settled call: dropped and logged; a string — it broke the output protocol: the call
   * fails 76.
   */
  #onCallFrame(message: { type: string; id: string }, taken: boolean | string): void {
    if (taken === false) {
      const what = message.type === 'chunk' ? 'output' : message.type;
      const last = message.type === 'result';
      // Output of a call this server ended itself (deadline, stop past its grace) that the host sent
      // before it saw the cancel is expected: a warning per chunk would use up the host's warning
      // budget and hide the warnings that matter. Its late result is still warned (one per call).
      if (this.#pending.endedHere(message.id, last) && !last)
        this.#logger.debug({ host: this.#host, id: message.id }, `${what} for a call this server ended dropped`);
      else this.#log.warn({ host: this.#host, id: message.id }, `${what} for an unknown or settled call dropped`);
    } else if (taken !== true) this.#callFault(message.id, `broke the output protocol: ${taken}`, 'output_protocol');
  }

  #onError(error: Error): void {
    const code = wsErrorCloseCode(error);
    if (code === undefined) {
      // A socket error (e.g. ECONNRESET); ws follows with 'close', which settles the session.
      this.#logger.debug({ host: this.#host, err: error }, 'host socket error');
      return;
    }
    // ws refused a frame and is already closing the socket with `code`.
    this.#violation(code, error.message, 'undecodable');
  }

  #onClose(code: number, reason: Buffer): void {
    this.#end(endings.disconnected(this.#host, code, peerReasonText(reason)));
  }

  // ---- ending --------------------------------------------------------------------------------

  /** Run `handler` (with `a`, `b`, as a method of this session); a throw ends the session 1011. */
  #guard<A, B>(handler: (this: HostSession, a: A, b: B) => void, a?: A, b?: B): void {
    try {
      handler.call(this, a as A, b as B);
    } catch (error) {
      this.#internalError(error);
    }
  }

  /** A bug of ours while handling this connection: end it 1011, whatever state it is in. */
  #internalError(error: unknown): void {
    this.#logger.error({ host: this.#host, err: error }, 'internal error while handling a host connection');
    try {
      this.#end(endings.internalError(this.#host));
    } catch (inner) {
      this.#logger.error({ host: this.#host, err: inner }, 'ending a host session failed');
    }
    // If the failure was inside an ending already under way, the socket may still be open.
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.terminate();
  }

  #violation(code: number, reason: string, kind?: RefusedFrameKind): void {
    if (kind !== undefined && this.#state !== 'closed') this.#counters.refused(kind);
    this.#end(endings.violation(this.#host, code, reason));
  }

  /** The one way a session ends. Idempotent: only the first ending counts. */
  #end(ending: Ending): void {
    if (this.#state === 'closed') return;
    const wasBound = this.#state === 'open';
    this.#state = 'closed';
    clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
    this.#heartbeat.stop();
    this.#inbox.close();
    this.#pending.failAll(ending.kind, ending.reason);
    if (wasBound) this.#router.unbind(this);
    this.#log.flush({ host: this.#host });
    const code = ending.close?.code ?? ending.code ?? (ending.terminate ? 1006 : undefined);
    this.#logger.info({ host: this.#host, remote: this.remote, code, reason: ending.reason }, 'host session ended');
    try {
      if (ending.terminate) this.#ws.terminate();
      else if (ending.close && this.#ws.readyState === WebSocket.OPEN) {
        this.#ws.close(ending.close.code, closeReasonText(ending.close.text));
      }
    } catch (error) {
      this.#logger.error({ host: this.#host, err: error }, 'closing host socket failed');
      this.#ws.terminate();
    }
  }

  // ---- outgoing ------------------------------------------------------------------------------

  #send(message: ServerMessage): void {
    this.#sendText(encodeMessage(message));
  }

  #sendText(text: string): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    this.#coalescer?.hold(text.length);
    this.#counters.bytesOut += text.length;
    // No write callback: a write that fails errors the socket, and the session ends through ws
    // 'close' (logged there). A callback makes Node's stream schedule a tick and copy its buffered
    // writes for every send.
    this.#ws.send(text);
  }
}

/** Bytes of a received WebSocket payload. */
function rawLength(data: RawData): number {
  if (Array.isArray(data)) {
    let n = 0;
    for (const part of data) n += part.length;
    return n;
  }
  return data.byteLength;
}
