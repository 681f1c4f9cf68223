/**
 * The fault proxy: a TCP proxy of its own on 127.0.0.1 (no root needed) between tool hosts and the
 * server. Every accepted connection is piped to the target through two {@link Pump}s, and faults
 * apply to one connection ({@link ProxyConnection}) or to all of them, current and future
 * ({@link FaultProxy}).
 */
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';
import { track, untrack } from './cleanup.js';
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

const clean = (): Faults => ({ latencyMs: 0, jitterMs: 0, bytesPerSecond: 0, blackhole: false, slowCloseMs: 0 });

function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number ≥ 0, got ${value}`);
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
    this.faults.latencyMs = nonNegative('latency ms', ms);
    this.faults.jitterMs = nonNegative('latency jitterMs', jitterMs);
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
    this.faults.slowCloseMs = nonNegative('slowClose ms', ms);
    return this;
  }

  heal(): this {
    Object.assign(this.faults, clean());
    this.#budget = undefined;
    return this.#changed();
  }
}

/** Where the proxy forwards to: a `ws://`/`http://` URL or a TCP port on 127.0.0.1. */
export type ProxyTarget = string | { host?: string; port: number };

/**
 * A fault proxy listening on 127.0.0.1 (port 0) in front of `target`. Its `url` is the target's URL
 * with the proxy's port: give it to tool hosts instead of the server's URL.
 */
export class FaultProxy implements FaultControls {
  readonly url: string;
  readonly port: number;
  /** Connections open now, oldest first. */
  readonly connections: ProxyConnection[] = [];
  readonly #server: Server;
  readonly #faults: Faults = clean();
  #budget: number | undefined;
  #refusing = false;
  #nextId = 1;
  #closing: Promise<void> | undefined;
  readonly #waiters = new Set<(c: ProxyConnection) => void>();

  private constructor(server: Server, url: string, port: number) {
    this.#server = server;
    this.url = url;
    this.port = port;
  }

  /** Start a proxy in front of `target`; resolves once it listens. */
  static async start(target: ProxyTarget): Promise<FaultProxy> {
    const parsed = typeof target === 'string' ? new URL(target) : undefined;
    const host = parsed ? parsed.hostname.replace(/^\[|\]$/g, '') : ((target as { host?: string }).host ?? '127.0.0.1');
    const port = parsed ? Number(parsed.port) : (target as { port: number }).port;
    if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new RangeError(`FaultProxy: target needs a port 1-65535, got ${String(port)}`);
    const server = createServer({ allowHalfOpen: true }); // FINs are passed on by the proxy, not answered by Node
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const own = (server.address() as AddressInfo).port;
    const url = parsed ? `${parsed.protocol}//127.0.0.1:${own}${parsed.pathname === '/' ? '' : parsed.pathname}` : `tcp://127.0.0.1:${own}`;
    const proxy = new FaultProxy(server, url, own);
    server.on('connection', (socket) => proxy.#accept(socket, host, port));
    return track(proxy);
  }

  #accept(client: Socket, host: string, port: number): void {
    client.on('error', () => {});
    if (this.#refusing || this.#closing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect({ port, host, allowHalfOpen: true });
    const connection = new ProxyConnection(this.#nextId++, client, upstream, this.#faults, this.#budget);
    this.connections.push(connection);
    void connection.closed.then(() => {
      const i = this.connections.indexOf(connection);
      if (i >= 0) this.connections.splice(i, 1);
    });
    for (const waiter of this.#waiters) waiter(connection);
  }

  /**
   * Resolves with the next connection accepted (or the newest open one when `existing` and one is
   * open); rejects after `timeoutMs` (default 10000).
   */
  nextConnection(options: { timeoutMs?: number; existing?: boolean } = {}): Promise<ProxyConnection> {
    const newest = this.connections.at(-1);
    if (options.existing && newest !== undefined) return Promise.resolve(newest);
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(onConnection);
        reject(new Error(`FaultProxy: no connection within ${timeoutMs} ms`));
      }, timeoutMs);
      const onConnection = (connection: ProxyConnection): void => {
        clearTimeout(timer);
        this.#waiters.delete(onConnection);
        resolve(connection);
      };
      this.#waiters.add(onConnection);
    });
  }

  #all(apply: (c: ProxyConnection) => void): this {
    for (const connection of [...this.connections]) apply(connection);
    return this;
  }

  latency(ms: number, jitterMs = 0): this {
    this.#faults.latencyMs = nonNegative('latency ms', ms);
    this.#faults.jitterMs = nonNegative('latency jitterMs', jitterMs);
    return this.#all((c) => c.latency(ms, jitterMs));
  }

  bandwidth(bytesPerSecond: number): this {
    if (!(nonNegative('bandwidth bytesPerSecond', bytesPerSecond) > 0)) throw new RangeError('bandwidth bytesPerSecond must be > 0 (heal() removes it)');
    this.#faults.bytesPerSecond = bytesPerSecond;
    return this.#all((c) => c.bandwidth(bytesPerSecond));
  }

  /** Every open connection goes silent, and so does every new one until {@link heal}. */
  blackhole(): this {
    this.#faults.blackhole = true;
    return this.#all((c) => c.blackhole());
  }

  reset(): this {
    return this.#all((c) => c.reset());
  }

  /** Each open connection, and each new one, closes after `bytes` more bytes (counted per connection). */
  closeAfter(bytes: number): this {
    if (!Number.isInteger(bytes) || bytes < 0) throw new RangeError(`closeAfter bytes must be an integer ≥ 0, got ${bytes}`);
    this.#budget = bytes;
    return this.#all((c) => c.closeAfter(bytes));
  }

  slowClose(ms = 1000): this {
    this.#faults.slowCloseMs = nonNegative('slowClose ms', ms);
    return this.#all((c) => c.slowClose(ms));
  }

  /** New connections are reset at once (RST) until {@link heal}: the server is unreachable. */
  refuse(): this {
    this.#refusing = true;
    return this;
  }

  /** Remove every fault, on open connections and for new ones; stop refusing. */
  heal(): this {
    Object.assign(this.#faults, clean());
    this.#budget = undefined;
    this.#refusing = false;
    return this.#all((c) => c.heal());
  }

  /** Stop listening and destroy every connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
      for (const connection of [...this.connections]) connection.reset();
      await Promise.all([closed, ...this.connections.map((c) => c.closed)]);
      untrack(this);
    })();
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Start a {@link FaultProxy} in front of `target` (a server's `url`, or `{port}`). */
export function startProxy(target: ProxyTarget): Promise<FaultProxy> {
  return FaultProxy.start(target);
}
