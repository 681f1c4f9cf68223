/**
 * The calling side of a call to a host on another node (DESIGN §10): each pending remote call has
 * one owner here, settled exactly once — by the host's node's `result`, by this node's deadline
 * backstop (124), by the loss of that node (69), or at close (69).
 */
import { type Capture, type Failure, HeadTailBuffer, failureCapture } from '@toolwire/protocol';
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { Logger } from '../options.js';
import type { HostLink } from '../router/host-link.js';
import type { RoutedCall, RoutedCapture } from '../seam.js';
import { MAX_TIMER_MS, normalizeDeadline } from '../session/admission.js';
import { Deadlines } from '../session/deadlines.js';
import { isStopped, unwatchCall, watchCall } from '../session/stop-watch.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { type Answer, type Section, decodeAnswer, decodeMeta } from './answer.js';
import { type Batcher, ITEM_HEADER, unbatch } from './batch.js';
import { type CallControl, type CallRequest, encode } from './wire.js';

/**
 * One pending call. A class, not a literal with closures: one object per call, its `stop` (the
 * caller's signal aborted: publish the cancel; one shared listener per signal, `stop-watch.ts`) a
 * method.
 */
class Pending {
  /** `part` answers received so far, per section (a capture larger than one NATS message). */
  parts: Record<Section, Uint8Array[]> | undefined = undefined;
  /** Bytes of {@link parts}, all sections. */
  partBytes = 0;
  /** When the backstop fires, `performance.now()` ms (set by {@link Deadlines.add}). */
  expiresAt = 0;

  constructor(
    readonly calls: RemoteCalls,
    /** The call's id among this node's calls (its answers carry it). */
    readonly id: number,
    readonly node: string,
    /** The call's deadline, ms (its own or the server's default). */
    readonly deadlineMs: number,
    /** How long this node waits for the answer: the deadline and the grace, at most 2^31 − 1 ms (the backstop's length). */
    readonly waitMs: number,
    readonly call: RoutedCall,
    readonly resolve: (capture: RoutedCapture) => void,
    /** What was streamed to the caller (capped, head + tail), for a capture this node ends; and the next seq. */
    readonly streamed: { stdout: HeadTailBuffer; stderr: HeadTailBuffer; seq: number } | undefined,
    /** The link whose in-flight count this call holds, if any. */
    readonly link: RemoteHostLink | undefined,
  ) {}

  stop(): void {
    this.calls.cancel(this);
  }

  /** The backstop: the host's node did not answer within the deadline and the grace (124). */
  expire(): void {
    this.calls.expire(this);
  }
}

/** What the remote calls need: the bus and its batches, this node's subjects, the default deadline and a grace, the logger. */
export interface RemoteCallsDeps {
  bus: Bus;
  /** This node's outgoing batches (`batch.ts`): calls go out in them, and cancels and credits after them. */
  batcher: Batcher;
  subjects: Subjects;
  node: string;
  /** The server's default deadline, ms (a call without its own). */
  deadlineMs: number;
  /** How long past a call's deadline the host's node may take to answer before this node settles 124, ms. */
  graceMs: number;
  /** Per-stream cap of a capture, bytes (head + tail): what a capture this node ends keeps of the streamed output. */
  capBytes: number;
  /**
   * Largest answer taken from another node, bytes (this node's `maxPayload`: no capture a host sends
   * in its one `result` frame is larger); more `part`s settle the call 76 and the rest is dropped.
   */
  maxAnswerBytes: number;
  logger: Logger;
}

/** The pending calls this node sent to hosts on other nodes. */
export class RemoteCalls {
  readonly #deps: RemoteCallsDeps;
  /** Renewed every {@link RENEW_AFTER_ADDS} calls (`churn.ts`). */
  #pending = new Map<number, Pending>();
  #adds = 0;
  /** The backstops of the pending calls: one timer per distinct length, as a host session's deadlines. */
  readonly #deadlines = new Deadlines<Pending>();
  /** Where this node's answers arrive, in batches (`batch.ts`): the reply subject of its calls. */
  readonly #answers: string;
  #next = 0;
  #unsubscribe: (() => void) | undefined;

  constructor(deps: RemoteCallsDeps) {
    this.#deps = deps;
    this.#answers = deps.subjects.replies(deps.node);
    this.#unsubscribe = deps.bus.subscribe(this.#answers, (data) => {
      if (!unbatch(data, this.#onAnswer)) deps.logger.warn({}, 'cluster: unreadable answers from another node dropped');
    });
  }

  /**
   * Send `call` to tool `tool` of `host` on `node`; always settles with a capture. `link`: its
   * in-flight count is taken here and given back when the call settles.
   */
  call(node: string, host: string, tool: string, call: RoutedCall, link?: RemoteHostLink): Promise<RoutedCapture> {
    const { bus, subjects } = this.#deps;
    if (!bus.connected) return Promise.resolve(failureCapture('unavailable', `host ${host} is on node ${node}, and this node is not connected to the cluster`));
    if (isStopped(call)) return Promise.resolve(failureCapture('cancelled', 'cancelled by stop'));
    const stream = call.onOutput !== undefined;
    const request: CallRequest = { host, tool, name: call.name, id: call.id, input: call.input, workspace: call.workspace, agent: call.agent };
    if (call.deadlineMs !== undefined) request.deadlineMs = call.deadlineMs;
    if (stream) request.stream = true;
    let data: Uint8Array;
    try {
      data = encode(request);
    } catch (error) {
      // JSON cannot encode it (a cycle, a BigInt): refused as a host session refuses it, nothing sent.
      const why = error instanceof Error ? error.message : String(error);
      return Promise.resolve(failureCapture('invalid_input', `input cannot be encoded as JSON: ${why}`));
    }
    if (data.length + ITEM_HEADER > bus.maxPayload) {
      return Promise.resolve(
        failureCapture('invalid_input', `the call of ${data.length} bytes is over the cluster's message limit (${bus.maxPayload} bytes, NATS max_payload)`),
      );
    }
    const id = this.#next++;
    // As a host session reads it (≤ 2^31 − 1 ms), and the backstop no longer than a timer can wait:
    // a longer one fired at once and re-armed every millisecond (TimeoutOverflowWarning) until the answer.
    const deadline = normalizeDeadline(call.deadlineMs, this.#deps.deadlineMs);
    const waitMs = Math.min(deadline + this.#deps.graceMs, MAX_TIMER_MS);
    let streamed: Pending['streamed'];
    if (stream) {
      const head = Math.floor(this.#deps.capBytes / 2);
      const tail = this.#deps.capBytes - head;
      streamed = { stdout: new HeadTailBuffer(head, tail), stderr: new HeadTailBuffer(head, tail), seq: 0 };
    }
    return new Promise<RoutedCapture>((resolve) => {
      const pending = new Pending(this, id, node, deadline, waitMs, call, resolve, streamed, link);
      this.#deadlines.add(pending, pending.waitMs);
      if (++this.#adds === RENEW_AFTER_ADDS) {
        this.#adds = 0;
        this.#pending = new Map(this.#pending);
      }
      this.#pending.set(id, pending);
      watchCall(call, pending);
      if (link !== undefined) link.inFlight += 1;
      this.#deps.batcher.send(subjects.node(node, 'call'), id, data, this.#answers);
    });
  }

  /** Publish the cancel of a pending call (its caller's signal aborted). */
  cancel(p: Pending): void {
    const control: CallControl = { reply: this.#answers, id: p.id };
    this.#deps.batcher.publish(this.#deps.subjects.node(p.node, 'cancel'), encode(control));
  }

  /** The backstop past a call's deadline (+ grace): the host's node did not answer in time. */
  expire(p: Pending): void {
    this.#fail(p.id, 'deadline', `deadline of ${p.deadlineMs} ms exceeded (node ${p.node} did not answer in time)`);
  }

  /**
   * Node `node` is lost (or left): its pending calls settle 69 with `reason`, and each is also
   * cancelled there: a node only stalled (SIGSTOP, a long pause) reads the cancels when it runs
   * again and stops the calls on its hosts, instead of running them to their deadline for a
   * caller already answered 69. To a node truly gone they go nowhere.
   */
  failNode(node: string, reason: string): void {
    for (const [id, p] of this.#pending) {
      if (p.node !== node) continue;
      this.cancel(p);
      this.#fail(id, 'unavailable', reason);
    }
  }

  /** Settle every pending call 69 and stop listening. Idempotent. */
  close(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    for (const id of [...this.#pending.keys()]) this.#fail(id, 'unavailable', 'server shutting down');
    this.#deadlines.clear(); // no timer outlives the node
  }

  /** One answer of a batch (`batch.ts`); `data` is a view of the NATS message. */
  readonly #onAnswer = (id: number, data: Uint8Array): void => {
    const p = this.#pending.get(id);
    if (p === undefined) return; // settled already (deadline, node loss): late answers are dropped
    const answer = decodeAnswer(data);
    if (answer === undefined) {
      this.#deps.logger.warn({ node: p.node, id: p.call.id }, 'cluster: unreadable answer from another node dropped');
      return;
    }
    if (answer.t === 'part') {
      p.partBytes += answer.bytes.length;
      if (p.partBytes > this.#deps.maxAnswerBytes) {
        this.#deps.logger.warn({ node: p.node, id: p.call.id, limit: this.#deps.maxAnswerBytes }, 'cluster: an answer from another node over maxPayload dropped');
        return this.#fail(id, 'protocol', `the answer of node ${p.node} is larger than ${this.#deps.maxAnswerBytes} bytes (maxPayload)`);
      }
      (p.parts ??= { stdout: [], stderr: [], meta: [] })[answer.section].push(copy(answer.bytes));
    } else if (answer.t === 'output') this.#output(p, answer);
    else {
      const meta = decodeMeta(whole(p.parts?.meta, answer.meta));
      if (meta === undefined) {
        this.#deps.logger.warn({ node: p.node, id: p.call.id }, 'cluster: unreadable answer from another node');
        return this.#fail(id, 'protocol', `the answer of node ${p.node} did not arrive intact`);
      }
      const capture: Capture = { stdout: whole(p.parts?.stdout, answer.stdout), stderr: whole(p.parts?.stderr, answer.stderr), exitCode: answer.exitCode, ...meta };
      this.#settle(id, capture);
    }
  };

  /** A live-output chunk: to the caller's listener, credited back to the host's node once consumed. */
  #output(p: Pending, chunk: Extract<Answer, { t: 'output' }>): void {
    const control: CallControl = { reply: this.#answers, id: p.id, seq: chunk.seq };
    const ack = (): void => this.#deps.batcher.publish(this.#deps.subjects.node(p.node, 'ack'), encode(control));
    const stream = chunk.stream;
    const bytes = copy(chunk.bytes); // the listener may keep it: not a view of the NATS read buffer
    if (p.streamed !== undefined) {
      p.streamed[stream].push(bytes);
      p.streamed.seq = chunk.seq + 1;
    }
    this.#deliver(p, stream, bytes, chunk.seq, ack);
  }

  /** Hand one chunk to the caller's listener; `done` once it has taken it. A throw is logged, never the call's. */
  #deliver(p: Pending, stream: 'stdout' | 'stderr', bytes: Uint8Array, seq: number, done: () => void): void {
    const listener = p.call.onOutput;
    if (listener === undefined) return done();
    let taken: void | Promise<void> = undefined;
    try {
      taken = listener({ stream, bytes, seq });
    } catch (error) {
      this.#deps.logger.warn({ err: error, id: p.call.id }, 'an output listener threw');
    }
    if (taken instanceof Promise) taken.then(done, done);
    else done();
  }

  /**
   * End a call here with a synthetic capture: it keeps what was streamed, and the caller's listener
   * gets the reason line as the last chunk (as a host session does).
   */
  #fail(id: number, kind: Failure, reason: string): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    const partial = p.streamed === undefined ? {} : { stdout: p.streamed.stdout.bytes('stdout'), stderr: p.streamed.stderr.bytes('stderr') };
    const capture = failureCapture(kind, reason, partial);
    if (p.streamed !== undefined) {
      const line = capture.stderr.subarray(partial.stderr?.length ?? 0);
      this.#deliver(p, 'stderr', line, p.streamed.seq, () => undefined);
    }
    this.#settle(id, capture);
  }

  #settle(id: number, capture: RoutedCapture): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    this.#deadlines.remove(p, p.waitMs);
    unwatchCall(p.call, p);
    if (p.link !== undefined) p.link.inFlight -= 1;
    p.resolve(capture);
  }
}

/**
 * A copy of `bytes` (a view of a NATS message, which is a view of the socket's read buffer): what a
 * caller keeps must not keep that whole buffer alive. `Buffer#slice` would be another view.
 */
function copy(bytes: Uint8Array): Uint8Array {
  return Buffer.from(bytes);
}

/** `parts` then `last`, in one buffer that owns its memory (`last` is a view of a NATS message). */
function whole(parts: Uint8Array[] | undefined, last: Uint8Array): Uint8Array {
  if (parts === undefined || parts.length === 0) return copy(last);
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, last.length));
  let at = 0;
  for (const x of parts) {
    out.set(x, at);
    at += x.length;
  }
  out.set(last, at);
  return out;
}

/** A host connected to another node, as this node's router sees it. */
export class RemoteHostLink implements HostLink {
  readonly host: string;
  readonly node: string;
  readonly remote: string | undefined;
  readonly connectedAt: Date;
  #open = true;
  /** Calls sent and not settled; kept by {@link RemoteCalls} (taken at send, given back at settle). */
  inFlight = 0;
  readonly #calls: RemoteCalls;

  constructor(calls: RemoteCalls, node: string, host: string, connectedAt: Date, remote?: string) {
    this.#calls = calls;
    this.node = node;
    this.host = host;
    this.connectedAt = connectedAt;
    this.remote = remote;
  }

  get isOpen(): boolean {
    return this.#open;
  }

  call(tool: string, call: RoutedCall): Promise<RoutedCapture> {
    if (!this.#open) return Promise.resolve(failureCapture('unavailable', `host ${this.host} is not connected`));
    return this.#calls.call(this.node, this.host, tool, call, this);
  }

  /** Replaced (a newer session of the identity) or gone: no new calls; calls in flight end by their node's answer, its loss or their deadline. */
  replace(): void {
    this.#open = false;
  }
}
