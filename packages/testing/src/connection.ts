/**
 * One proxied connection of the fault proxy: the host side (`client`) and the server side
 * (`upstream`), piped through two {@link Pump}s, with the fault controls of that connection alone.
 */
import type { Socket } from 'node:net';
import { type Faults, Pump } from './pump.js';

/** The fault controls shared by one connection and the whole proxy. Each returns `this`. */
export interface FaultControls {
  /** Hold every chunk `ms` (± a uniform `jitterMs`; order kept) in both directions. */
  latency(ms: number, jitterMs?: number): this;
  /** At most `bytesPerSecond` in each direction; the sender is pushed back (its socket buffers fill). */
  bandwidth(bytesPerSecond: number): this;
  /** Half-open: every byte from now on vanishes in both directions, and no FIN or RST is passed on (the silent peer). */
  blackhole(): this;
  /** Reset (TCP RST) both sides of the connection(s) open now. */
  reset(): this;
  /** After `bytes` more bytes (both directions counted) have passed, close both sides with a FIN. */
  closeAfter(bytes: number): this;
  /** A FIN or close seen on one side reaches the other only `ms` later (default 1000); bytes still flow meanwhile. */
  slowClose(ms?: number): this;
  /** Remove every fault (what waits for latency or bandwidth is released at once); a blackhole's lost bytes stay lost. */
  heal(): this;
}

export const clean = (): Faults => ({ latencyMs: 0, jitterMs: 0, bytesPerSecond: 0, blackhole: false, slowCloseMs: 0 });

export function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number ≥ 0, got ${value}`);
  return value;
}

/** The longest timer Node honours, ms (2^31 - 1); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `value` as a delay or bound in ms: a number in 0 … {@link MAX_TIMER_MS}. @throws RangeError otherwise */
export function delayMs(name: string, value: number): number {
  if (nonNegative(name, value) > MAX_TIMER_MS) throw new RangeError(`${name} must be at most ${MAX_TIMER_MS} ms, got ${value}`);
  return value;
}

/** One proxied connection: the host side (`client`) and the server side (`upstream`). */
export class ProxyConnection implements FaultControls {
  readonly id: number;
  readonly client: Socket;
  readonly upstream: Socket;
  readonly faults: Faults;
  /** Resolves when both sockets are closed. */
  readonly closed: Promise<void>;
  /** When the host side went away (FIN, close or error seen; `performance.now()`), else undefined. */
  clientGoneAt: number | undefined;
  /** When the server side went away (FIN, close or error seen; `performance.now()`), else undefined. */
  upstreamGoneAt: number | undefined;
  #budget: number | undefined;
  /** slowClose and FIN-linger timers: cleared when the connection ends, so none outlives it. */
  readonly #timers = new Set<NodeJS.Timeout>();
  #ends = 0;
  #finished = false;
  readonly #pumps: Pump[];

  constructor(id: number, client: Socket, upstream: Socket, faults: Faults, budget: number | undefined) {
    this.id = id;
    this.client = client;
    this.upstream = upstream;
    this.faults = { ...faults };
    this.#budget = budget;
    // Prepended, so the moment is taken before the pumps (or a test) react to the same event.
    for (const event of ['end', 'close', 'error']) {
      client.prependListener(event, () => (this.clientGoneAt ??= performance.now()));
      upstream.prependListener(event, () => (this.upstreamGoneAt ??= performance.now()));
    }
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.#pumps = [new Pump(client, upstream, this), new Pump(upstream, client, this)];
    // Not events.once: it rejects on an 'error' (an RST), and a connection's end is no failure here.
    const gone = (socket: Socket): Promise<void> => (socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve())));
    this.closed = Promise.all([gone(client), gone(upstream)]).then(() => this.#stop());
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      socket.on('error', () => {}); // the close below tells the other side
      socket.on('close', (hadError) => {
        if (this.faults.blackhole) return; // the silent peer: nothing is passed on
        this.#later(() => (hadError ? other.resetAndDestroy() : other.destroy()));
      });
    }
  }

  get open(): boolean {
    return !this.client.destroyed || !this.upstream.destroyed;
  }

  /** @internal the pumps' byte budget (closeAfter) */
  allow(n: number): number {
    if (this.#budget === undefined) return n;
    const allowed = Math.min(n, this.#budget);
    this.#budget -= allowed;
    // Closed once the budget is spent, after the pump has written what it was allowed.
    if (this.#budget === 0) queueMicrotask(() => this.#finish());
    return allowed;
  }

  /** @internal a pump's source ended and its queue is written: pass the FIN on (after slowClose) */
  ended(pump: Pump): void {
    const to = pump === this.#pumps[0] ? this.upstream : this.client;
    this.#later(() => {
      if (!to.writableEnded) to.end();
      if (++this.#ends === 2) this.#stop();
    });
  }

  #later(fn: () => void, ms = this.faults.slowCloseMs): void {
    if (ms <= 0) return fn();
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#quiet();
    this.client.end();
    this.upstream.end();
    // A peer that never closes its side is destroyed a moment later, FIN already sent.
    this.#later(() => this.#stop(), 1000);
  }

  /** No timer left, nothing more written. */
  #quiet(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const pump of this.#pumps) pump.stop();
  }

  #stop(): void {
    this.#quiet();
    this.client.destroy();
    this.upstream.destroy();
  }

  #changed(): this {
    for (const pump of this.#pumps) pump.kick();
    return this;
  }

  latency(ms: number, jitterMs = 0): this {
    this.faults.latencyMs = delayMs('latency ms', ms);
    this.faults.jitterMs = delayMs('latency jitterMs', jitterMs);
    return this.#changed();
  }

  bandwidth(bytesPerSecond: number): this {
    if (!(nonNegative('bandwidth bytesPerSecond', bytesPerSecond) > 0)) throw new RangeError('bandwidth bytesPerSecond must be > 0 (heal() removes it)');
    this.faults.bytesPerSecond = bytesPerSecond;
    return this.#changed();
  }

  blackhole(): this {
    this.faults.blackhole = true;
    for (const pump of this.#pumps) pump.drop();
    return this;
  }

  reset(): this {
    this.#quiet();
    this.client.resetAndDestroy();
    this.upstream.resetAndDestroy();
    return this;
  }

  closeAfter(bytes: number): this {
    if (!Number.isInteger(bytes) || bytes < 0) throw new RangeError(`closeAfter bytes must be an integer ≥ 0, got ${bytes}`);
    this.#budget = bytes;
    if (bytes === 0) this.#finish();
    return this;
  }

  slowClose(ms = 1000): this {
    this.faults.slowCloseMs = delayMs('slowClose ms', ms);
    return this;
  }

  heal(): this {
    Object.assign(this.faults, clean());
    this.#budget = undefined;
    return this.#changed();
  }
}
