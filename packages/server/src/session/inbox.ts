/**
 * The order and pace of one host's incoming frames. Frames are handled in arrival order even when
 * one is decoded off the event loop (the ones behind it wait); reading from the socket pauses while
 * frames wait (and while an `advertise` waits, `advertising.ts`), so a host that sends faster than
 * the server gets through its frames is slowed by TCP, not buffered without bound.
 */
import type { Decoded } from '@toolwire/protocol';
import type { RawData, WebSocket } from 'ws';
import type { HostFrame } from '../worker/jobs.js';

function rawToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** Frames that may wait behind one being decoded before the host is refused (they arrive after a pause only from ws's buffer). */
export const MAX_WAITING_FRAMES = 65_536;

/** Why reading is paused; the socket is read again when no reason is left. */
export type Hold = 'backlog' | 'advertise';

/** Pausing and resuming reads from one socket, for several reasons at once. */
export class Flow {
  readonly #ws: WebSocket;
  readonly #onResume: () => void;
  readonly #holds = new Set<Hold>();

  /** `onResume`: called each time reading resumes. */
  constructor(ws: WebSocket, onResume: () => void) {
    this.#ws = ws;
    this.#onResume = onResume;
  }

  hold(reason: Hold): void {
    if (this.#holds.size === 0) this.#ws.pause();
    this.#holds.add(reason);
  }

  release(reason: Hold): void {
    if (!this.#holds.delete(reason) || this.#holds.size > 0) return;
    this.#ws.resume();
    this.#onResume();
  }
}

/** How the inbox decodes and hands on frames. `deliver` must not throw (the session guards it). */
export interface InboxDeps {
  decode: (data: Buffer, isBinary: boolean) => Decoded<HostFrame> | Promise<Decoded<HostFrame>>;
  deliver: (frame: Decoded<HostFrame>) => void;
  /** More than {@link MAX_WAITING_FRAMES} frames waited. */
  overflow: () => void;
  flow: Flow;
}

/** Incoming frames of one session, in order. */
export class FrameInbox {
  readonly #deps: InboxDeps;
  /** Frames waiting while one is decoded off the loop; `undefined` when none is. */
  #waiting: [Buffer, boolean][] | undefined;
  #closed = false;

  constructor(deps: InboxDeps) {
    this.#deps = deps;
  }

  /** One frame as ws delivers it. */
  push(raw: RawData, isBinary: boolean): void {
    if (this.#closed) return;
    const data = rawToBuffer(raw);
    if (this.#waiting === undefined) return this.#take(data, isBinary);
    if (this.#waiting.length >= MAX_WAITING_FRAMES) return this.#deps.overflow();
    this.#waiting.push([data, isBinary]);
    this.#deps.flow.hold('backlog');
  }

  /** Drop what waits; nothing more is delivered. */
  close(): void {
    this.#closed = true;
    this.#waiting = undefined;
  }

  #take(data: Buffer, isBinary: boolean): void {
    const decoded = this.#deps.decode(data, isBinary);
    if (!(decoded instanceof Promise)) return this.#deps.deliver(decoded);
    this.#waiting = [];
    void decoded.then((frame) => this.#decoded(frame));
  }

  #decoded(frame: Decoded<HostFrame>): void {
    const backlog = this.#waiting ?? [];
    this.#waiting = undefined;
    if (this.#closed) return;
    this.#deps.deliver(frame);
    // No frame can arrive while this runs: the backlog goes first, in order, until one is off the loop again.
    while (backlog.length > 0 && !this.#closed && !this.#busy()) {
      const [data, isBinary] = backlog.shift()!;
      this.#take(data, isBinary);
    }
    if (this.#busy()) this.#waiting!.push(...backlog);
    else this.#deps.flow.release('backlog');
  }

  /** A frame is being decoded off the loop. */
  #busy(): boolean {
    return this.#waiting !== undefined;
  }
}
