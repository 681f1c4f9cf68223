/**
 * The result of a call that ran (`outcome: 'completed'`). Its capture and id are fields; what is
 * derived from them — the bounded projection, the envelope, the start and end as `Date`s — is built
 * on first read and kept, so a caller that reads only the capture (a program driving `execute()`
 * directly) does not pay for the text the model would read. Each is built at most once: reading it
 * twice gives the same object.
 *
 * They are getters of the class, so an object spread (`{ ...result }`) copies only the own fields;
 * `toJSON()` gives all of them, as a plain object would.
 */
import type { Capture } from '@toolwire/protocol';
import { type Envelope, envelope } from './envelope.js';
import { type Projection, project } from './projection.js';
import type { CompletedResult } from './request.js';

export class Completed implements CompletedResult {
  readonly outcome = 'completed' as const;
  readonly id: string;
  /** Full, uncapped capture (as the router returned it, or synthetic). */
  readonly capture: Capture;
  readonly #head: number;
  readonly #tail: number;
  readonly #startedMs: number;
  readonly #endedMs: number;
  #projection: Projection | undefined = undefined;
  #envelope: Envelope | undefined = undefined;
  #startedAt: Date | undefined = undefined;
  #endedAt: Date | undefined = undefined;

  /**
   * @param head bytes of each stream's head the projection keeps
   * @param tail bytes of each stream's tail the projection keeps
   * @param startedMs when the executor admitted the call, ms since the epoch
   * @param endedMs when the capture was in hand, ms since the epoch
   */
  constructor(id: string, capture: Capture, head: number, tail: number, startedMs: number, endedMs: number) {
    this.id = id;
    this.capture = capture;
    this.#head = head;
    this.#tail = tail;
    this.#startedMs = startedMs;
    this.#endedMs = endedMs;
  }

  /** stdout/stderr bounded by the projection limits (see `projection.ts`). */
  get projection(): Projection {
    return (this.#projection ??= project(this.capture, this.#head, this.#tail));
  }

  /** The text the model reads (see `envelope.ts`). */
  get envelope(): Envelope {
    return (this.#envelope ??= envelope(this.projection));
  }

  /** When the executor admitted the call (after the grant gate). */
  get startedAt(): Date {
    return (this.#startedAt ??= new Date(this.#startedMs));
  }

  /** When the capture was in hand (before `output.json` was written). */
  get endedAt(): Date {
    return (this.#endedAt ??= new Date(this.#endedMs));
  }

  /** Every field, as a plain object (`JSON.stringify` of a result). */
  toJSON(): CompletedResult {
    return { outcome: this.outcome, id: this.id, capture: this.capture, projection: this.projection, envelope: this.envelope, startedAt: this.startedAt, endedAt: this.endedAt };
  }
}
