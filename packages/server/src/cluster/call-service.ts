/**
 * The host's side of calls from other nodes (DESIGN §10): a call arriving on
 * `toolwire.<cluster>.node.<this>.call` runs on the local host session as any call does, its live
 * output goes to the caller's node chunk by chunk (each chunk credited back by an `ack`, so the
 * host's output window holds across nodes), a `cancel` stops it, and the capture goes back in
 * pieces that fit NATS messages.
 */
import { failureCapture } from '@toolwire/protocol';
import type { Logger } from '../options.js';
import type { HostLink } from '../router/host-link.js';
import type { Router } from '../router/router.js';
import type { OutputChunk, RoutedCall, RoutedCapture } from '../seam.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { encodeCapture, encodeOutput } from './answer.js';
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
    const call: RoutedCall = {
      id: request.id,
      name: typeof request.name === 'string' ? request.name : request.tool,
      input: request.input,
      workspace: String(request.workspace ?? ''),
      agent: String(request.agent ?? ''),
      signal: this.#closing.signal,
    };
    if (typeof request.deadlineMs === 'number') call.deadlineMs = request.deadlineMs;
    const running = new Running(link, call);
    if (request.stream === true) {
      const credits = (running.credits = new Map<number, () => void>());
      call.onOutput = (chunk: OutputChunk): Promise<void> =>
        new Promise<void>((credit) => {
          credits.set(chunk.seq, credit);
          this.#deps.bus.publish(reply, encodeOutput(chunk.stream, chunk.seq, chunk.bytes));
        });
    }
    // A local link is a host session (it has `stop`); any other link gets a signal of its own.
    if (link.stop === undefined) {
      running.controller = new AbortController();
      call.signal = AbortSignal.any([running.controller.signal, this.#closing.signal]);
    }
    this.#running.set(reply, running);
    void link.call(request.tool, call).then((capture) => {
      running.creditAll();
      if (this.#running.get(reply) !== running) return; // answered at close already
      this.#running.delete(reply);
      this.#answer(reply, capture);
    });
  }

  #onAck(data: Uint8Array): void {
    const control = decode<CallControl>(data);
    if (control === undefined || typeof control.seq !== 'number') return;
    const running = this.#running.get(control.reply);
    const credit = running?.credits?.get(control.seq);
    if (credit === undefined) return;
    running!.credits!.delete(control.seq);
    credit();
  }

  /** The capture: one message when it fits NATS `max_payload`, else in pieces (`answer.ts`). */
  #answer(reply: string, capture: RoutedCapture): void {
    const { bus } = this.#deps;
    for (const message of encodeCapture(capture, bus.maxPayload)) bus.publish(reply, message);
  }
}
