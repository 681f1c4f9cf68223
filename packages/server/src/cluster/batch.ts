/**
 * Calls and their answers between nodes, coalesced (DESIGN §10): what a node sends to one subject
 * in one turn of its event loop (the calls of every caller for one node, the answers for one
 * caller's node) travels as one NATS message, so NATS routes, and each node's client parses and
 * dispatches, one message per turn rather than one per call. The batch goes out at the end of the
 * turn (a microtask: a lone call waits for nothing), or sooner when the next item would take it
 * past NATS `max_payload`.
 *
 * Layout: items back to back, each the call's id (u48, big-endian), the length of its bytes (u32,
 * big-endian) and the bytes.
 */
import type { Bus } from './bus.js';

/** Bytes an item takes besides its own. */
export const ITEM_HEADER = 10;

/** The items queued for one subject. */
interface Queue {
  reply: string | undefined;
  ids: number[];
  items: Uint8Array[];
  /** Bytes of the batch so far, headers included. */
  bytes: number;
}

/** This node's outgoing batches, one per subject; and the messages that must not overtake them. */
export class Batcher {
  readonly #bus: Bus;
  /** Replaced, not cleared, at each flush (`churn.ts`: a cleared table stays linked to the next). */
  #queues = new Map<string, Queue>();
  #scheduled = false;
  readonly #flushNow = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  constructor(bus: Bus) {
    this.#bus = bus;
  }

  /**
   * Queue `data` (not to be changed until sent) as item `id` of the batch to `subject`, whose NATS
   * reply subject is `reply` (one per subject: a batch with another reply goes out first). An item
   * of more than `maxPayload − ITEM_HEADER` bytes is not sent (the NATS client refuses it; callers
   * check sizes first).
   */
  send(subject: string, id: number, data: Uint8Array, reply?: string): void {
    let queue = this.#queues.get(subject);
    const size = ITEM_HEADER + data.length;
    if (queue !== undefined && (queue.bytes + size > this.#bus.maxPayload || queue.reply !== reply)) {
      this.#queues.delete(subject);
      this.#publish(subject, queue);
      queue = undefined;
    }
    if (queue === undefined) {
      queue = { reply, ids: [], items: [], bytes: 0 };
      this.#queues.set(subject, queue);
    }
    queue.ids.push(id);
    queue.items.push(data);
    queue.bytes += size;
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#flushNow);
    }
  }

  /** Publish every queued batch now. */
  flush(): void {
    if (this.#queues.size === 0) return;
    const queues = this.#queues;
    this.#queues = new Map();
    for (const [subject, queue] of queues) this.#publish(subject, queue);
  }

  /** Publish one message on `subject` after every batch queued so far (a cancel must not overtake its call). */
  publish(subject: string, data: Uint8Array, reply?: string): void {
    this.flush();
    this.#bus.publish(subject, data, reply);
  }

  #publish(subject: string, queue: Queue): void {
    const out = Buffer.allocUnsafe(queue.bytes);
    let at = 0;
    for (let i = 0; i < queue.items.length; i++) {
      const item = queue.items[i]!;
      out.writeUIntBE(queue.ids[i]!, at, 6);
      out.writeUInt32BE(item.length, at + 6);
      out.set(item, at + ITEM_HEADER);
      at += ITEM_HEADER + item.length;
    }
    this.#bus.publish(subject, out, queue.reply);
  }
}

/**
 * Hand each item of batch `data` to `each` (its bytes a view of `data`: copy what is kept), in
 * order, with the number of items in the batch. Returns false, and hands over nothing, when `data`
 * is not a well-formed batch.
 */
export function unbatch(data: Uint8Array, each: (id: number, bytes: Uint8Array, count: number) => void): boolean {
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  let count = 0;
  while (at < data.length) {
    if (at + ITEM_HEADER > data.length) return false;
    at += ITEM_HEADER + view.readUInt32BE(at + 6);
    count += 1;
  }
  if (at !== data.length || data.length === 0) return false;
  at = 0;
  while (at < data.length) {
    const end = at + ITEM_HEADER + view.readUInt32BE(at + 6);
    each(view.readUIntBE(at, 6), data.subarray(at + ITEM_HEADER, end), count);
    at = end;
  }
  return true;
}
