/**
 * The fault proxy: a TCP proxy of its own on 127.0.0.1 (no root needed) between tool hosts and the
 * server. Every accepted connection is piped to the target as a {@link ProxyConnection}, and faults
 * apply to one connection or to all of them, current and future ({@link FaultProxy}).
 */
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';
import { track, untrack } from './cleanup.js';
import { type FaultControls, ProxyConnection, clean, delayMs, nonNegative } from './connection.js';
import type { Faults } from './pump.js';

export { ProxyConnection, type FaultControls } from './connection.js';

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
  /** Connections accepted so far (open or closed, refused ones included). */
  accepted = 0;
  readonly #server: Server;
  readonly #faults: Faults = clean();
  #budget: number | undefined;
  #refusing = false;
  #nextId = 1;
  #closing: Promise<void> | undefined;
  /** Pending {@link nextConnection} calls: resolved by a connection, rejected by their bound or by close. */
  readonly #waiters = new Set<{ resolve: (c: ProxyConnection) => void; reject: (e: Error) => void }>();

  private constructor(server: Server, url: string, port: number) {
    this.#server = server;
    this.url = url;
    this.port = port;
  }

  /**
   * Start a proxy in front of `target`; resolves once it listens on `options.listen` (a local
   * address, default `127.0.0.1`; the netns mode uses its veth's address), port 0.
   */
  static async start(target: ProxyTarget, options: { listen?: string } = {}): Promise<FaultProxy> {
    const listen = options.listen ?? '127.0.0.1';
    const parsed = typeof target === 'string' ? new URL(target) : undefined;
    const host = parsed ? parsed.hostname.replace(/^\[|\]$/g, '') : ((target as { host?: string }).host ?? '127.0.0.1');
    const port = parsed ? Number(parsed.port) : (target as { port: number }).port;
    if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new RangeError(`FaultProxy: target needs a port 1-65535, got ${String(port)}`);
    const server = createServer({ allowHalfOpen: true }); // FINs are passed on by the proxy, not answered by Node
    server.listen(0, listen);
    await once(server, 'listening');
    const own = (server.address() as AddressInfo).port;
    const url = parsed ? `${parsed.protocol}//${listen}:${own}${parsed.pathname === '/' ? '' : parsed.pathname}` : `tcp://${listen}:${own}`;
    const proxy = new FaultProxy(server, url, own);
    server.on('connection', (socket) => proxy.#accept(socket, host, port));
    return track(proxy);
  }

  #accept(client: Socket, host: string, port: number): void {
    client.on('error', () => {});
    this.accepted++;
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
    for (const waiter of [...this.#waiters]) waiter.resolve(connection);
  }

  /**
   * Resolves with the next connection accepted (or the newest open one when `existing` and one is
   * open); rejects after `timeoutMs` (default 10000), or at once when the proxy is (or gets) closed.
   */
  nextConnection(options: { timeoutMs?: number; existing?: boolean } = {}): Promise<ProxyConnection> {
    const newest = this.connections.at(-1);
    if (options.existing && newest !== undefined) return Promise.resolve(newest);
    if (this.#closing) return Promise.reject(new Error('FaultProxy: closed; no connection will come'));
    const timeoutMs = delayMs('nextConnection timeoutMs', options.timeoutMs ?? 10_000);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (connection: ProxyConnection): void => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(connection);
        },
        reject: (error: Error): void => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          reject(error);
        },
      };
      const timer = setTimeout(() => waiter.reject(new Error(`FaultProxy: no connection within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  #all(apply: (c: ProxyConnection) => void): this {
    for (const connection of [...this.connections]) apply(connection);
    return this;
  }

  latency(ms: number, jitterMs = 0): this {
    this.#faults.latencyMs = delayMs('latency ms', ms);
    this.#faults.jitterMs = delayMs('latency jitterMs', jitterMs);
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
    this.#faults.slowCloseMs = delayMs('slowClose ms', ms);
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
      for (const waiter of [...this.#waiters]) waiter.reject(new Error('FaultProxy: closed while waiting for a connection'));
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

/** Start a {@link FaultProxy} in front of `target` (a server's `url`, or `{port}`), listening on `options.listen` (default 127.0.0.1). */
export function startProxy(target: ProxyTarget, options: { listen?: string } = {}): Promise<FaultProxy> {
  return FaultProxy.start(target, options);
}
