/**
 * The host's side of calls from other nodes (DESIGN §10): a call arriving on
 * `toolwire.<cluster>.node.<this>.call` runs on the local host session as any call does, its live
 * output goes to the caller's node chunk by chunk (each chunk credited back by an `ack`, so the
 * host's output window holds across nodes), a `cancel` stops it, and the capture goes back in
 * pieces that fit NATS messages.
 */
import { failureCapture } from '@toolwire/protocol';
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { Logger } from '../options.js';
import type { HostLink } from '../router/host-link.js';
import type { Router } from '../router/router.js';
import type { OutputChunk, RoutedCall, RoutedCapture } from '../seam.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { encodeCapture, encodeOutput } from './answer.js';
import { type Batcher, ITEM_HEADER, unbatch } from './batch.js';
import { type CallControl, type CallRequest, decode } from './wire.js';

/**
 * A call from another node running here. A class, not a literal with closures: one object per call
 * (its `stop` and the credits of its live output are only what the call needs).
 */
class Running {
  /** Output chunks sent and not yet credited, by seq (only for a call that streams). */
  credits: Map<number, () => void> | undefined = undefined;
  /** The signal of a call on a link that is not a host session (it has no `stop(call)`). */
  controller: AbortController | undefined = undefined;

  constructor(
    /** Where the caller's node takes its answers, and the call's id there. */
    readonly reply: string,
    readonly id: number,
    readonly link: HostLink,
    readonly call: RoutedCall,
  ) {}

  /** Stop the call on its host (130). */
  stop(): void {
    if (this.controller !== undefined) this.controller.abort();
    else void this.link.stop?.(this.call);
  }

  /** Release every output chunk still waiting for its credit (the call ended). */
  creditAll(): void {
    if (this.credits !== undefined) for (const credit of this.credits.values()) credit();
  }
}

export interface CallServiceDeps {
  bus: Bus;
  /** This node's outgoing batches (`batch.ts`): the answers go out in them. */
  batcher: Batcher;
  subjects: Subjects;
  node: string;
  router: Router;
  logger: Logger;
}

/** Absent, or a string (an optional text field of a call from another node). */
function optionalText(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

/** Each field of a call from another node has its type (a string field absent or a string; `deadlineMs` absent or a number). */
function wellFormed(request: CallRequest): boolean {
  return (
    typeof request.host === 'string' &&
    typeof request.tool === 'string' &&
    typeof request.id === 'string' &&
    optionalText(request.name) &&
    optionalText(request.workspace) &&
    optionalText(request.agent) &&
    (request.deadlineMs === undefined || typeof request.deadlineMs === 'number')
  );
}

/** The key of a running call: its caller node's answer subject and its id there. */
const keyOf = (reply: string, id: number): string => `${reply} ${id}`;

/** Runs other nodes' calls on this node's hosts. */
export class CallService {
  readonly #deps: CallServiceDeps;
  /** By {@link keyOf}; renewed every {@link RENEW_AFTER_ADDS} calls (`churn.ts`). */
  #running = new Map<string, Running>();
  #adds = 0;
  readonly #unsubscribe: (() => void)[];
  /**
   * The stop signal of every call run here, aborted only at close: a single call is stopped with
   * its host session's `stop(call)` (one signal for all, as a caller's agent has, instead of an
   * `AbortController` and a listener per call).
   */
  readonly #closing = new AbortController();

  constructor(deps: CallServiceDeps) {
    this.#deps = deps;
    const { bus, subjects, node } = deps;
    this.#unsubscribe = [
      bus.subscribe(subjects.node(node, 'call'), (data, reply) => {
        if (reply === undefined || !unbatch(data, (id, bytes, count) => this.#onCall(bytes, reply, id, count > 1))) {
          this.#deps.logger.warn({ reply }, 'cluster: unreadable calls from another node dropped');
        }
      }),
      bus.subscribe(subjects.node(node, 'cancel'), (data) => this.#control(data)?.running.stop()),
      bus.subscribe(subjects.node(node, 'ack'), (data) => this.#onAck(data)),
    ];
  }

  /**
   * Stop listening and stop the calls still running (their hosts kill the work). Their callers'
   * nodes are answered 69 at once (this node is leaving), before the stopped calls' own ends.
   */
  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
    const running = [...this.#running.values()];
    this.#running.clear();
    for (const r of running) this.#answer(r.reply, r.id, failureCapture('unavailable', `node ${this.#deps.node} is shutting down`));
    this.#deps.batcher.flush();
    this.#closing.abort();
  }

  /** A `cancel` or `ack`, and the running call it names; `undefined` when it names none. */
  #control(data: Uint8Array): { control: CallControl; running: Running } | undefined {
    const control = decode<CallControl>(data);
    if (control === undefined || typeof control.reply !== 'string' || typeof control.id !== 'number') return undefined;
    const running = this.#running.get(keyOf(control.reply, control.id));
    return running === undefined ? undefined : { control, running };
  }

  /** `many`: one of several calls that arrived together (their frames to a host leave together). */
  #onCall(data: Uint8Array, reply: string, id: number, many: boolean): void {
    const key = keyOf(reply, id);
    if (this.#running.has(key)) return;
    const request = decode<CallRequest>(data);
    if (request === undefined || !wellFormed(request)) {
      this.#deps.logger.warn({ reply }, 'cluster: unreadable call from another node');
      return this.#answer(reply, id, failureCapture('protocol', 'the call did not reach the host node intact'));
    }
    const link = this.#deps.router.linkOf(request.host);
    if (link === undefined || link.node !== undefined || !link.isOpen) {
      return this.#answer(reply, id, failureCapture('unavailable', `host ${request.host} is not connected to node ${this.#deps.node}`));
    }
    const call: RoutedCall = {
      id: request.id,
      name: request.name ?? request.tool,
      input: request.input,
      workspace: request.workspace ?? '',
      agent: request.agent ?? '',
      signal: this.#closing.signal,
    };
    if (typeof request.deadlineMs === 'number') call.deadlineMs = request.deadlineMs;
    const running = new Running(reply, id, link, call);
    if (request.stream === true) {
      const credits = (running.credits = new Map<number, () => void>());
      call.onOutput = (chunk: OutputChunk): Promise<void> =>
        new Promise<void>((credit) => {
          credits.set(chunk.seq, credit);
          this.#deps.batcher.send(reply, id, encodeOutput(chunk.stream, chunk.seq, chunk.bytes));
        });
    }
    // A local link is a host session (it has `stop`); any other link gets a signal of its own.
    if (link.stop === undefined) {
      running.controller = new AbortController();
      call.signal = AbortSignal.any([running.controller.signal, this.#closing.signal]);
    }
    if (++this.#adds === RENEW_AFTER_ADDS) {
      this.#adds = 0;
      this.#running = new Map(this.#running);
    }
    this.#running.set(key, running);
    if (many) link.holdFrames?.();
    void link.call(request.tool, call).then((capture) => {
      running.creditAll();
      if (this.#running.get(key) !== running) return; // answered at close already
      this.#running.delete(key);
      this.#answer(reply, id, capture);
    });
  }

  #onAck(data: Uint8Array): void {
    const named = this.#control(data);
    const seq = named?.control.seq;
    if (named === undefined || typeof seq !== 'number') return;
    const credit = named.running.credits?.get(seq);
    if (credit === undefined) return;
    named.running.credits!.delete(seq);
    credit();
  }

  /** The capture: one item when it fits NATS `max_payload`, else in pieces (`answer.ts`), in the batch to the caller's node. */
  #answer(reply: string, id: number, capture: RoutedCapture): void {
    const { bus, batcher } = this.#deps;
    for (const message of encodeCapture(capture, bus.maxPayload - ITEM_HEADER)) batcher.send(reply, id, message);
  }
}
