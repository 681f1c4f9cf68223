/**
 * The little of NATS the cluster uses (core request/reply and publish/subscribe), so its parts
 * are testable and the NATS client sits in one file (`nats-bus.ts`).
 */

/** A message handler: its data, and the reply subject when the sender expects answers. */
export type BusHandler = (data: Uint8Array, reply: string | undefined, subject: string) => void;

export interface Bus {
  /** True while connected to a NATS server (not while reconnecting or closed). */
  readonly connected: boolean;
  /** The largest message the NATS servers take, bytes. */
  readonly maxPayload: number;
  /** Fire and forget; a message published while disconnected is buffered or dropped by the client. */
  publish(subject: string, data: Uint8Array, reply?: string): void;
  /** Subscribe (wildcards allowed); returns the unsubscribe. */
  subscribe(subject: string, handler: BusHandler): () => void;
  /**
   * One request, one answer. Rejects on timeout, on no responders (no node subscribed) and when
   * disconnected.
   */
  request(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
}
