/**
 * One direction of a proxied TCP connection: bytes read from `from` are queued and written to `to`
 * after the connection's faults are applied — latency (each chunk held `latencyMs` ± `jitterMs`,
 * order kept), bandwidth (a token bucket: at most `bytesPerSecond`, chunks split as needed),
 * blackhole (bytes read and dropped; no FIN passed on) and a byte budget (`closeAfter`).
 * Reading pauses while more than {@link HIGH_WATER} bytes wait, so a slow direction pushes back on
 * its sender as a slow network would.
 */
import type { Socket } from 'node:net';

/** Bytes queued in one direction before reading from its source pauses. */
export const HIGH_WATER = 64 * 1024;

/** The faults of one connection, read by both of its pumps at every step. */
export interface Faults {
  latencyMs: number;
  jitterMs: number;
  /** 0: unlimited. */
  bytesPerSecond: number;
  blackhole: boolean;
  /** Delay before a FIN (or close) seen on one side reaches the other, ms; 0: at once. */
  slowCloseMs: number;
}

/** What a pump asks of its connection. */
export interface PumpOwner {
  readonly faults: Faults;
  /** How many of `n` bytes may pass (the `closeAfter` budget); 0 ends the connection. */
  allow(n: number): number;
  /** The source ended (FIN) and every queued byte was written: pass the end on. */
  ended(pump: Pump): void;
}

interface Chunk {
  bytes: Buffer;
  at: number;
}

export class Pump {
  readonly #from: Socket;
  readonly #to: Socket;
  readonly #owner: PumpOwner;
  readonly #queue: Chunk[] = [];
  #queued = 0;
  #lastAt = 0;
  #tokens = 0;
  #refilledAt = performance.now();
  #timer: NodeJS.Timeout | undefined;
  #waitingDrain = false;
  #sourceEnded = false;
  #done = false;

  constructor(from: Socket, to: Socket, owner: PumpOwner) {
    this.#from = from;
    this.#to = to;
    this.#owner = owner;
    from.on('data', (data: Buffer) => this.#push(data));
    from.on('end', () => {
      this.#sourceEnded = true;
      this.#run();
    });
  }

  /** Drop what is queued (a blackhole swallows it too). */
  drop(): void {
    this.#queue.length = 0;
    this.#queued = 0;
    this.#from.resume();
  }

  /** Stop for good: no timer left, nothing more written. */
  stop(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
  }

  /** Faults changed: run again now (a healed latency or bandwidth releases what waits). */
  kick(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = performance.now();
    for (const chunk of this.#queue) chunk.at = Math.min(chunk.at, now + this.#owner.faults.latencyMs);
    this.#run();
  }

  #push(data: Buffer): void {
    if (this.#done || this.#owner.faults.blackhole) return; // read and dropped
    const { latencyMs, jitterMs } = this.#owner.faults;
    const delay = latencyMs + (jitterMs > 0 ? (Math.random() * 2 - 1) * jitterMs : 0);
    // Order is kept: a chunk never leaves before the one read before it.
    const at = Math.max(this.#lastAt, performance.now() + Math.max(0, delay));
    this.#lastAt = at;
    this.#queue.push({ bytes: data, at });
    this.#queued += data.length;
    if (this.#queued > HIGH_WATER) this.#from.pause();
    this.#run();
  }

  #schedule(ms: number): void {
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#run();
      },
      // At most the longest timer Node honours (a longer one fires after 1 ms): a tiny bandwidth waits, then checks again.
      Math.min(2 ** 31 - 1, Math.max(1, Math.ceil(ms))),
    );
  }

  #run(): void {
    if (this.#done || this.#timer !== undefined || this.#waitingDrain) return;
    const faults = this.#owner.faults;
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      const now = performance.now();
      if (head.at > now) return this.#schedule(head.at - now);
      let n = head.bytes.length;
      if (faults.bytesPerSecond > 0) {
        const burst = Math.max(1, Math.floor(faults.bytesPerSecond / 20)); // 50 ms worth
        this.#tokens = Math.min(burst, this.#tokens + ((now - this.#refilledAt) * faults.bytesPerSecond) / 1000);
        this.#refilledAt = now;
        const want = Math.min(n, burst);
        if (this.#tokens < want) return this.#schedule(((want - this.#tokens) * 1000) / faults.bytesPerSecond);
        n = want;
        this.#tokens -= n;
      }
      n = this.#owner.allow(n);
      if (n === 0 || this.#done) return;
      const part = head.bytes.subarray(0, n);
      head.bytes = head.bytes.subarray(n);
      if (head.bytes.length === 0) this.#queue.shift();
      this.#queued -= n;
      if (this.#queued <= HIGH_WATER / 2) this.#from.resume();
      if (!this.#to.write(part)) {
        this.#waitingDrain = true;
        this.#to.once('drain', () => {
          this.#waitingDrain = false;
          this.#run();
        });
        return;
      }
    }
    if (this.#sourceEnded && !faults.blackhole) this.#owner.ended(this);
  }
}
