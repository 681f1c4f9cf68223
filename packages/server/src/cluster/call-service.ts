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
  controller: AbortController;
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

  constructor(deps: CallServiceDeps) {
    this.#deps = deps;
    const { bus, subjects, node } = deps;
    this.#unsubscribe = [
      bus.subscribe(subjects.node(node, 'call'), (data, reply) => this.#onCall(data, reply)),
      bus.subscribe(subjects.node(node, 'cancel'), (data) => this.#running.get(decode<CallControl>(data)?.reply ?? '')?.controller.abort()),
      bus.subscribe(subjects.node(node, 'ack'), (data) => this.#onAck(data)),
    ];
  }

  /** Stop listening and stop the calls still running (their hosts kill the work). */
  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
    for (const running of this.#running.values()) running.controller.abort();
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
    const running: Running = { controller: new AbortController(), credits: new Map() };
    this.#running.set(reply, running);
    const onOutput = (chunk: OutputChunk): Promise<void> =>
      new Promise<void>((credit) => {
        running.credits.set(chunk.seq, credit);
        this.#deps.bus.publish(reply, encodeOutput(chunk.stream, chunk.seq, chunk.bytes));
      });
    const call: RoutedCall = {
      id: request.id,
      name: typeof request.name === 'string' ? request.name : request.tool,
      input: request.input,
      workspace: String(request.workspace ?? ''),
      agent: String(request.agent ?? ''),
      signal: running.controller.signal,
      ...(typeof request.deadlineMs === 'number' && { deadlineMs: request.deadlineMs }),
      ...(request.stream === true && { onOutput }),
    };
    void link.call(request.tool, call).then((capture) => {
      this.#running.delete(reply);
      for (const credit of running.credits.values()) credit();
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
