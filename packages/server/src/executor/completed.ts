/**
 * The result of a completed call ({@link CompletedResult}) with its derived parts built on first
 * read: the bounded projection, the envelope and the two `Date`s. Most callers read only the
 * capture (a library caller, the router's tests, the bench); the MCP door reads the envelope. Each
 * part is built once and kept, so every read after the first returns the same object.
 *
 * The derived parts are getters of the class, not own properties: `JSON.stringify` includes them
 * (through `toJSON`), a spread (`{ ...result }`) does not.
 */
import type { Capture } from '@toolwire/protocol';
import { type Envelope, envelope } from './envelope.js';
import { type Projection, project } from './projection.js';
import type { CompletedResult } from './request.js';

/** A completed invocation (see the module comment). Built by the executor only. */
export class Completed implements CompletedResult {
  readonly outcome = 'completed' as const;
  readonly id: string;
  readonly capture: Capture;
  /** Projection limits (bytes per stream) and times (ms since the epoch) the derived parts are built from. */
  readonly #head: number;
  readonly #tail: number;
  readonly #startedMs: number;
  readonly #endedMs: number;
  #projection: Projection | undefined = undefined;
  #envelope: Envelope | undefined = undefined;
  #startedAt: Date | undefined = undefined;
  #endedAt: Date | undefined = undefined;

  constructor(id: string, capture: Capture, head: number, tail: number, startedMs: number, endedMs: number) {
    this.id = id;
    this.capture = capture;
    this.#head = head;
    this.#tail = tail;
    this.#startedMs = startedMs;
    this.#endedMs = endedMs;
  }

  /** stdout/stderr bounded by the projection limits (`projection.ts`). */
  get projection(): Projection {
    return (this.#projection ??= project(this.capture, this.#head, this.#tail));
  }

  /** The text the model reads (`envelope.ts`). */
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

  /** Every field, the derived ones included (what `JSON.stringify` writes). */
  toJSON(): CompletedResult {
    const { outcome, id, capture, projection, envelope, startedAt, endedAt } = this;
    return { outcome, id, capture, projection, envelope, startedAt, endedAt };
  }
}
