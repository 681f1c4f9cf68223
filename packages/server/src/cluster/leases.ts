/**
 * Host identity leases (DESIGN §10): one key per host identity in a JetStream key-value bucket,
 * taken with compare-and-set when a host says hello on a node. The node that loses the key is asked
 * to close its session of that identity (4000) before the new session binds, and every node also
 * watches the bucket, so a session whose lease moved is closed even when that request was lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm, KvWatchInclude, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../options.js';
import { decode, encode } from './wire.js';

interface Lease {
  node: string;
  at: number;
}

/** Key of a host identity (base64url: any identity, only key-safe characters). */
const keyOf = (host: string): string => `h.${Buffer.from(host).toString('base64url') || '_'}`;
const hostOf = (key: string): string => Buffer.from(key.slice(2), 'base64url').toString();
/** First pause before a claim's next compare-and-set, ms (doubled at each try: 50 … 400 with the default 5 tries). */
const RETRY_MS = 50;

/** Key of an exposed tool name (naming `bare`). */
const nameKey = (name: string): string => `n.${Buffer.from(name).toString('base64url')}`;

export interface LeasesDeps {
  node: string;
  logger: Logger;
  /** Ask `node` to close its session of `host`; resolves when done or given up (bounded). */
  evict: (node: string, host: string) => Promise<void>;
  /** This node's session of `host` lost its lease: close it. */
  lost: (host: string) => void;
  /** Tries of the compare-and-set before giving up (the host then binds without a lease, logged). */
  tries?: number;
}

/** The leases of one cluster. Without JetStream (`open` fails) the cluster runs without them, logged. */
export class Leases {
  readonly #kv: KV;
  readonly #deps: LeasesDeps;
  #stopWatch: (() => void) | undefined;
  /** The revision of this node's lease per host it holds (a watch event older than it is stale). */
  readonly #mine = new Map<string, number>();
  /** Aborted by {@link close}: ends a claim's pause between tries (no timer outlives the leases). */
  readonly #closing = new AbortController();

  private constructor(kv: KV, deps: LeasesDeps) {
    this.#kv = kv;
    this.#deps = deps;
  }

  /**
   * Open (or create, with `replicas`, default 1) the bucket and watch it. The bucket is read
   * through its leader, never a replica (`allow_direct` off, also for a bucket created with it on
   * or given replicas later): a lagging replica's answer would make every compare-and-set of a
   * claim fail, and the lease would not move.
   */
  static async open(nc: NatsConnection, bucket: string, deps: LeasesDeps, replicas = 1): Promise<Leases> {
    const kv = await new Kvm(nc).create(bucket, { history: 1, replicas, allow_direct: false });
    const leases = new Leases(kv, deps);
    await leases.#watch();
    return leases;
  }

  /**
   * Take `host`'s lease for this node. When another node held it, that node is asked to close its
   * session first. Never rejects: a failure is logged and the host binds on this node anyway.
   */
  async claim(host: string): Promise<void> {
    const { node, logger } = this.#deps;
    const key = keyOf(host);
    const value = encode({ node, at: Date.now() } satisfies Lease);
    let previous: string | undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        const entry = await this.#kv.get(key);
        previous = entry !== null && entry.operation === 'PUT' ? decode<Lease>(entry.value)?.node : undefined;
        try {
          const revision = entry === null ? await this.#kv.create(key, value) : await this.#kv.update(key, value, entry.revision);
          this.#mine.set(host, revision);
          break;
        } catch (error) {
          if (attempt + 1 >= (this.#deps.tries ?? 5) || this.#closing.signal.aborted) throw error;
          // Another node wrote it meanwhile, or the bucket is electing a leader: read again shortly.
          await sleep(RETRY_MS * 2 ** attempt, undefined, { signal: this.#closing.signal }).catch(() => undefined);
        }
      }
    } catch (error) {
      logger.warn({ err: error, host }, 'cluster: could not take the host identity lease; the host binds on this node only');
      return;
    }
    if (previous !== undefined && previous !== node) await this.#deps.evict(previous, host);
  }

  /**
   * Take the names `names` for `host` (naming `bare`: a name belongs to the first host of the
   * cluster that advertised it while it stays). Resolves with the names another host holds, → that
   * host. Never rejects: a name whose lease cannot be read or written is granted (logged).
   */
  async claimNames(host: string, names: string[]): Promise<Map<string, string>> {
    const taken = new Map<string, string>();
    const value = encode({ host, node: this.#deps.node });
    await Promise.all(
      names.map(async (name) => {
        const key = nameKey(name);
        try {
          for (let attempt = 0; attempt < (this.#deps.tries ?? 5); attempt++) {
            const entry = await this.#kv.get(key);
            const lease = entry !== null && entry.operation === 'PUT' ? decode<{ host?: string; node?: string }>(entry.value) : undefined;
            if (lease?.host === host && lease.node === this.#deps.node) return;
            // Another host's name; the same host's name held by another node moves here with the host.
            if (lease?.host !== undefined && lease.host !== host) return void taken.set(name, lease.host);
            try {
              if (entry === null) await this.#kv.create(key, value);
              else await this.#kv.update(key, value, entry.revision);
              return;
            } catch {
              // another node wrote it meanwhile: read again
            }
          }
        } catch (error) {
          this.#deps.logger.warn({ err: error, host, name }, 'cluster: could not take a tool name lease; the name is granted on this node');
        }
      }),
    );
    return taken;
  }

  /** Give up `host`'s leases of `names` (those it still holds). Never rejects. */
  async releaseNames(host: string, names: Iterable<string>): Promise<void> {
    await Promise.all(
      [...names].map(async (name) => {
        try {
          const entry = await this.#kv.get(nameKey(name));
          const lease = entry !== null && entry.operation === 'PUT' ? decode<{ host?: string; node?: string }>(entry.value) : undefined;
          if (entry === null || lease?.host !== host || lease.node !== this.#deps.node) return;
          await this.#kv.delete(nameKey(name), { previousSeq: entry.revision });
        } catch {
          // taken meanwhile, or unreachable
        }
      }),
    );
  }

  /** Give up `host`'s lease if this node still holds it. Never rejects. */
  async release(host: string): Promise<void> {
    try {
      this.#mine.delete(host);
      const entry = await this.#kv.get(keyOf(host));
      if (entry === null || entry.operation !== 'PUT' || decode<Lease>(entry.value)?.node !== this.#deps.node) return;
      await this.#kv.delete(keyOf(host), { previousSeq: entry.revision });
    } catch {
      // another node took it meanwhile, or the bucket is unreachable: the next claim settles it
    }
  }

  close(): void {
    this.#closing.abort();
    this.#stopWatch?.();
    this.#stopWatch = undefined;
  }

  async #watch(): Promise<void> {
    const iterator = await this.#kv.watch({ key: 'h.>', include: KvWatchInclude.UpdatesOnly });
    this.#stopWatch = () => iterator.stop();
    void (async () => {
      for await (const entry of iterator) {
        if (entry.operation !== 'PUT') continue;
        const owner = decode<Lease>(entry.value)?.node;
        if (owner === undefined || owner === this.#deps.node) continue;
        const host = hostOf(entry.key);
        const mine = this.#mine.get(host);
        if (mine === undefined || mine > entry.revision) continue;
        this.#mine.delete(host);
        this.#deps.lost(host);
      }
    })().catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'cluster: lease watch ended'));
  }
}
