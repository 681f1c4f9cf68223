/**
 * Host identity leases (DESIGN §10): one key per host identity in a JetStream key-value bucket,
 * taken with compare-and-set when a host says hello on a node. The node that loses the key is asked
 * to close its session of that identity (4000) before the new session binds, and every node also
 * watches the bucket, so a session whose lease moved is closed even when that request was lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { KvWatchInclude, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../options.js';
import { IdentityTakenError } from '../router/claims.js';
import { type Lease, bucketGone, createBucket, createdOf, hostOf, keyOf, writeBack } from './lease-bucket.js';
import { type NameLeaseBucket, claimNames, releaseNames } from './name-leases.js';
import { decode, encode } from './wire.js';

/**
 * How long a claim keeps trying, ms: a read or compare-and-set of the bucket goes unanswered while
 * it elects a leader (a NATS server lost: a few seconds). Under the default hello timeout (10 s),
 * which keeps running meanwhile.
 */
const CLAIM_MS = 8_000;
/** How long a host bound without its lease (the claim time ran out) goes on taking it, ms. */
const LATER_MS = 120_000;
/** First pause before a claim's next try, ms (doubled at each try up to {@link RETRY_MAX_MS}). */
const RETRY_MS = 50;
const RETRY_MAX_MS = 1_000;

export interface LeasesDeps {
  node: string;
  logger: Logger;
  /** Ask `node` to close its session of `host`; resolves when done or given up (bounded). */
  evict: (node: string, host: string) => Promise<void>;
  /** This node's session of `host` lost its lease: close it. */
  lost: (host: string) => void;
  /** How long a claim keeps trying, ms (default 8000); then the host binds without a lease (logged). */
  claimMs?: number;
  /** Whether a session of `host` is bound on this node. */
  holds: (host: string) => boolean;
}

/** Pause before the next try to open the bucket, ms (doubled at each try up to {@link OPEN_RETRY_MAX_MS}). */
const OPEN_RETRY_MS = 500;
const OPEN_RETRY_MAX_MS = 10_000;

/**
 * The leases of one cluster. The bucket is opened in the background until it opens: a NATS cluster
 * that is still electing its JetStream leader (just started, or a server was lost) answers nothing
 * for a while, and a node must not run without leases for good because of that. Until the bucket
 * is open, a host binds without a lease (logged).
 */
export class Leases {
  #kv: KV | undefined;
  readonly #deps: LeasesDeps;
  #stopWatch: (() => void) | undefined;
  /** The revision of this node's lease per host it holds (a watch event older than it is stale). */
  readonly #mine = new Map<string, number>();
  /** Claims in flight on this node, by host: the revision each wrote, `moved` once another node wrote the lease after it. */
  readonly #claiming = new Map<string, Set<{ revision?: number; moved: boolean }>>();
  /** Aborted by {@link close}: ends a claim's pause between tries (no timer outlives the leases). */
  readonly #closing = new AbortController();
  /** Settles when the bucket is open and watched, or the leases are closed. */
  readonly #opened: Promise<void>;
  /** Called when a try finds no JetStream in the NATS account (start-up need not wait then). */
  #noJetStream: () => void = () => undefined;
  readonly #noJetStreamSeen = new Promise<void>((resolve) => (this.#noJetStream = resolve));

  /** What checking and creating the bucket again needs ({@link #check}). */
  readonly #nc: NatsConnection;
  readonly #bucket: string;
  readonly #replicas: number;
  /** The bucket's stream creation time as last opened: another one is a bucket created anew. */
  #created: string | undefined;
  /** The check under way, if any (one at a time). */
  #checking: Promise<void> | undefined;
  /** What the tool name leases use of these ({@link claimNames}). */
  readonly #names: NameLeaseBucket;

  private constructor(nc: NatsConnection, bucket: string, deps: LeasesDeps, replicas: number) {
    this.#deps = deps;
    this.#nc = nc;
    this.#bucket = bucket;
    this.#replicas = replicas;
    this.#names = { deps, kv: () => this.#kv, retry: (what, attempt) => this.#retry(what, attempt) };
    this.#opened = this.#open(nc, bucket, replicas);
    // A NATS server may come back without its JetStream store (the bucket gone): look at each reconnect.
    void (async () => {
      for await (const status of nc.status()) {
        if (this.#closing.signal.aborted) return;
        if (status.type === 'reconnect') void this.#check();
      }
    })().catch(() => undefined);
  }

  /**
   * Open (or create, with `replicas`, default 1) the bucket and watch it, trying again until it
   * opens; resolves once it is open or after `waitMs` (default 0), whichever is first, or at once
   * when the NATS account has no JetStream (tries go on: {@link ready} says when they succeeded).
   * The bucket is read through its leader, never a replica (`allow_direct` off, also for a bucket
   * created with it on or given replicas later): a lagging replica's answer would make every
   * compare-and-set of a claim fail, and the lease would not move.
   */
  static async open(nc: NatsConnection, bucket: string, deps: LeasesDeps, replicas = 1, waitMs = 0): Promise<Leases> {
    const leases = new Leases(nc, bucket, deps, replicas);
    const waited = new AbortController();
    await Promise.race([leases.#opened, leases.#noJetStreamSeen, sleep(waitMs, undefined, { signal: waited.signal }).catch(() => undefined)]);
    waited.abort(); // no timer outlives the wait
    return leases;
  }

  /** Whether the bucket is open (leases are taken). */
  get ready(): boolean {
    return this.#kv !== undefined;
  }

  async #open(nc: NatsConnection, bucket: string, replicas: number): Promise<void> {
    const { logger } = this.#deps;
    const { signal } = this.#closing;
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        const kv = await createBucket(nc, bucket, replicas);
        if (signal.aborted) return;
        this.#created = await createdOf(kv);
        await this.#watch(kv);
        this.#kv = kv;
        if (attempt > 0) logger.info({ bucket, tries: attempt + 1 }, 'cluster: host identity lease bucket open');
        return;
      } catch (error) {
        if (error instanceof Error && error.name === 'JetStreamNotEnabled') this.#noJetStream();
        const log = attempt === 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
        log(
          { err: error, bucket },
          'cluster: cannot open the host identity lease bucket yet (no JetStream, or it is electing a leader); trying again, hosts bind without a lease meanwhile',
        );
      }
      const pause = Math.min(OPEN_RETRY_MS * 2 ** attempt, OPEN_RETRY_MAX_MS);
      await sleep(pause, undefined, { signal }).catch(() => undefined);
    }
  }

  /**
   * Take `host`'s lease for this node. When another node held it, that node is asked to close its
   * session first. When the bucket does not answer within the claim time the host binds on this
   * node anyway (logged), and the lease is taken (and the other node's session closed) once the
   * bucket answers, while the host stays here ({@link LATER_MS} at most).
   * @throws IdentityTakenError when another node took the lease (a newer session) while this claim
   *   waited for the previous owner's answer: the session must not bind. Never rejects otherwise.
   */
  async claim(host: string): Promise<void> {
    const { node, logger } = this.#deps;
    const opened = this.#kv;
    if (opened === undefined) return void logger.warn({ host }, 'cluster: the lease bucket is not open yet; the host binds on this node only');
    const key = keyOf(host);
    const value = encode({ node, at: Date.now() } satisfies Lease);
    let previous: string | undefined;
    const claiming: { revision?: number; moved: boolean } = { moved: false };
    const take = async (): Promise<void> => {
      const kv = this.#kv ?? opened; // the bucket as created again, if it was
      const entry = await kv.get(key);
      const owner = entry !== null && entry.operation === 'PUT' ? decode<Lease>(entry.value)?.node : undefined;
      // This node's own write whose answer was lost (a try that timed out) keeps the owner read before it.
      if (owner !== node) previous = owner;
      // Fails when another node wrote the key since it was read: read it again.
      const revision = entry === null ? await kv.create(key, value) : await kv.update(key, value, entry.revision);
      this.#mine.set(host, revision);
      claiming.revision = revision;
    };
    const evict = async (): Promise<void> => {
      if (previous !== undefined && previous !== node) await this.#deps.evict(previous, host);
    };
    const claims = this.#claiming.get(host) ?? new Set();
    this.#claiming.set(host, claims.add(claiming));
    try {
      try {
        await this.#retry(host, take, this.#deps.claimMs ?? CLAIM_MS);
      } catch (error) {
        logger.warn({ err: error, host }, 'cluster: could not take the host identity lease yet; the host binds on this node, and takes it once the bucket answers');
        void this.#later(host, take, evict);
        return;
      }
      await evict();
    } finally {
      claims.delete(claiming);
      if (claims.size === 0 && this.#claiming.get(host) === claims) this.#claiming.delete(host);
    }
    // While the previous owner was asked to close, a newer session on another node took the lease
    // (its evict request found no session bound here yet): this one must not bind.
    if (claiming.moved) throw new IdentityTakenError(`host ${host} was taken by a newer session on another node while this one waited for its lease`);
  }

  /** Go on taking `host`'s lease after its session bound without one, while the session stays on this node. */
  async #later(host: string, take: () => Promise<void>, evict: () => Promise<void>): Promise<void> {
    const { logger, holds } = this.#deps;
    // The session binds once the claim has resolved: try again from then on.
    await sleep(RETRY_MAX_MS, undefined, { signal: this.#closing.signal }).catch(() => undefined);
    try {
      await this.#retry(host, async () => (holds(host) ? take() : undefined), LATER_MS);
    } catch (error) {
      return void logger.warn({ err: error, host }, 'cluster: gave up taking the host identity lease; the host stays bound on this node without it');
    }
    if (!this.#mine.has(host) || !holds(host)) return;
    logger.info({ host }, 'cluster: host identity lease taken once the bucket answered');
    await evict();
  }

  /** Take the names `names` for `host` (naming `bare`): see {@link claimNames}. Never rejects. */
  claimNames(host: string, names: string[]): Promise<Map<string, string>> {
    return claimNames(this.#names, host, names);
  }

  /** Give up `host`'s leases of `names` (those it still holds): see {@link releaseNames}. Never rejects. */
  releaseNames(host: string, names: Iterable<string>): Promise<void> {
    return releaseNames(this.#names, host, names);
  }

  /** Give up `host`'s lease if this node still holds it. Never rejects. */
  async release(host: string): Promise<void> {
    try {
      this.#mine.delete(host);
      const kv = this.#kv;
      if (kv === undefined) return;
      const entry = await kv.get(keyOf(host));
      if (entry === null || entry.operation !== 'PUT' || decode<Lease>(entry.value)?.node !== this.#deps.node) return;
      await kv.delete(keyOf(host), { previousSeq: entry.revision });
    } catch {
      // another node took it meanwhile, or the bucket is unreachable: the next claim settles it
    }
  }

  /**
   * Run `attempt` until it resolves, pausing between tries; rejects with its last error once the
   * claim time ({@link LeasesDeps.claimMs}) is spent or the leases are closed. Retried: another
   * node's write since the read (a failed compare-and-set), and a bucket that does not answer
   * (electing a leader, or this node's NATS server reconnecting).
   */
  async #retry(what: string, attempt: () => Promise<void>, budgetMs = this.#deps.claimMs ?? CLAIM_MS): Promise<void> {
    const end = Date.now() + budgetMs;
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        if (bucketGone(error)) await this.#check();
        const pause = Math.min(RETRY_MS * 2 ** (tries - 1), RETRY_MAX_MS);
        if (this.#closing.signal.aborted || Date.now() + pause >= end) throw error;
        this.#deps.logger.debug({ err: error, key: what, tries }, 'cluster: a lease read or compare-and-set failed; trying again');
        await sleep(pause, undefined, { signal: this.#closing.signal }).catch(() => undefined);
      }
    }
  }

  /**
   * Whether the bucket is still the one opened: after NATS lost its JetStream store it is gone
   * (create it again) or was created again by another node. Either way it is watched anew and this
   * node writes back the leases of the sessions bound here (a key another node took meanwhile
   * closes the session here, as a moved lease does), so a claim on another node finds the owner and
   * asks it to close its session: one session per identity again. Never rejects.
   */
  #check(): Promise<void> {
    this.#checking ??= (async () => {
      const { logger } = this.#deps;
      try {
        const current = this.#kv;
        if (current === undefined || this.#closing.signal.aborted) return;
        let created: string | undefined;
        try {
          created = await createdOf(current);
        } catch (error) {
          if (!bucketGone(error)) return;
        }
        if (created !== undefined && created === this.#created) return;
        const kv = await createBucket(this.#nc, this.#bucket, this.#replicas);
        if (this.#closing.signal.aborted) return;
        this.#created = await createdOf(kv);
        this.#stopWatch?.();
        await this.#watch(kv);
        this.#kv = kv;
        logger.warn(
          { bucket: this.#bucket },
          'cluster: the host identity lease bucket was created anew (NATS lost its JetStream store); writing back the leases of this node’s hosts',
        );
        await writeBack(kv, this.#mine, this.#deps);
      } catch (error) {
        logger.debug(
          { err: error, bucket: this.#bucket },
          'cluster: could not check the host identity lease bucket; trying again at the next failed claim or reconnect',
        );
      } finally {
        this.#checking = undefined;
      }
    })();
    return this.#checking;
  }

  close(): void {
    this.#closing.abort();
    this.#stopWatch?.();
    this.#stopWatch = undefined;
  }

  async #watch(kv: KV): Promise<void> {
    const iterator = await kv.watch({ key: 'h.>', include: KvWatchInclude.UpdatesOnly });
    this.#stopWatch = () => iterator.stop();
    if (this.#closing.signal.aborted) this.close();
    void (async () => {
      for await (const entry of iterator) {
        if (entry.operation !== 'PUT') continue;
        const owner = decode<Lease>(entry.value)?.node;
        if (owner === undefined || owner === this.#deps.node) continue;
        const host = hostOf(entry.key);
        for (const claim of this.#claiming.get(host) ?? []) if (claim.revision !== undefined && entry.revision > claim.revision) claim.moved = true;
        const mine = this.#mine.get(host);
        if (mine === undefined || mine > entry.revision) continue;
        this.#mine.delete(host);
        this.#deps.lost(host);
      }
    })().catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'cluster: lease watch ended'));
  }
}
