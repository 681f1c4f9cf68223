/**
 * The host's side of calls from other nodes (DESIGN §10): a call arriving on
 * `toolwire.<cluster>.node.<this>.call` runs on the local host session as any call does, its live
 * output goes to the caller's node chunk by chunk (each chunk credited back by an `ack`, so the
 * host's output window holds across nodes), a `cancel` stops it, and the capture goes back in
 * pieces that fit NATS messages.
 */
import { failureCapture } from '@toolwire/protocol';
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import type { OutputChunk, RoutedCall, RoutedCapture } from '../seam.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { encodeCapture, encodeOutput } from './answer.js';
import { type CallControl, type CallRequest, decode } from './wire.js';

interface Running {
  /** Stops the call on its host (130). */
  stop: () => void;
  /** Output chunks sent and not yet credited, by seq. */
  credits: Map<number, () => void>;
}

export interface CallServiceDeps {
  bus: Bus;
  subjects: Subjects;
  node: string;
  router: Router;
  logger: Logger;
}

/** Runs other nodes' calls on this node's hosts. */
export class CallService {
  readonly #deps: CallServiceDeps;
  readonly #running = new Map<string, Running>();
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
      bus.subscribe(subjects.node(node, 'call'), (data, reply) => this.#onCall(data, reply)),
      bus.subscribe(subjects.node(node, 'cancel'), (data) => this.#running.get(decode<CallControl>(data)?.reply ?? '')?.stop()),
      bus.subscribe(subjects.node(node, 'ack'), (data) => this.#onAck(data)),
    ];
  }

  /**
   * Stop listening and stop the calls still running (their hosts kill the work). Their callers'
   * nodes are answered 69 at once (this node is leaving), before the stopped calls' own ends.
   */
  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
    const running = [...this.#running.keys()];
    this.#running.clear();
    for (const reply of running) this.#answer(reply, failureCapture('unavailable', `node ${this.#deps.node} is shutting down`));
    this.#closing.abort();
  }

  #onCall(data: Uint8Array, reply: string | undefined): void {
    if (reply === undefined || this.#running.has(reply)) return;
    const request = decode<CallRequest>(data);
    if (request === undefined || typeof request.host !== 'string' || typeof request.tool !== 'string' || typeof request.id !== 'string') {
      this.#deps.logger.warn({ reply }, 'cluster: unreadable call from another node');
      return this.#answer(reply, failureCapture('protocol', 'the call did not reach the host node intact'));
    }
    const link = this.#deps.router.linkOf(request.host);
    if (link === undefined || link.node !== undefined || !link.isOpen) {
      return this.#answer(reply, failureCapture('unavailable', `host ${request.host} is not connected to node ${this.#deps.node}`));
    }
    const stream = request.stream === true;
    const credits = new Map<number, () => void>();
    const onOutput = (chunk: OutputChunk): Promise<void> =>
      new Promise<void>((credit) => {
        credits.set(chunk.seq, credit);
        this.#deps.bus.publish(reply, encodeOutput(chunk.stream, chunk.seq, chunk.bytes));
      });
    const call: RoutedCall = {
      id: request.id,
      name: typeof request.name === 'string' ? request.name : request.tool,
      input: request.input,
      workspace: String(request.workspace ?? ''),
      agent: String(request.agent ?? ''),
      signal: this.#closing.signal,
      ...(typeof request.deadlineMs === 'number' && { deadlineMs: request.deadlineMs }),
      ...(stream && { onOutput }),
    };
    // A local link is a host session (it has `stop`); any other link gets a signal of its own.
    let stop: () => void;
    if (link.stop !== undefined) stop = () => void link.stop!(call);
    else {
      const controller = new AbortController();
      call.signal = AbortSignal.any([controller.signal, this.#closing.signal]);
      stop = () => controller.abort();
    }
    const running: Running = { stop, credits };
    this.#running.set(reply, running);
    void link.call(request.tool, call).then((capture) => {
      for (const credit of running.credits.values()) credit();
      if (this.#running.get(reply) !== running) return; // answered at close already
      this.#running.delete(reply);
      this.#answer(reply, capture);
    });
  }

  #onAck(data: Uint8Array): void {
    const control = decode<CallControl>(data);
    if (control === undefined || typeof control.seq !== 'number') return;
    const running = this.#running.get(control.reply);
    const credit = running?.credits.get(control.seq);
    if (credit === undefined) return;
    running!.credits.delete(control.seq);
    credit();
  }

  /** The capture: one message when it fits NATS `max_payload`, else in pieces (`answer.ts`). */
  #answer(reply: string, capture: RoutedCapture): void {
    const { bus } = this.#deps;
    for (const message of encodeCapture(capture, bus.maxPayload)) bus.publish(reply, message);
  }
}
