/**
 * The host identity lease bucket's keys and values, opening it, and telling when it was lost (a
 * NATS server back without its JetStream store) — what `leases.ts` needs to create it again and
 * write back the leases of the sessions bound on this node.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../options.js';
import { decode, encode } from './wire.js';

/** A host identity's lease: the node its session is bound on, and when it took it (ms since the epoch). */
export interface Lease {
  node: string;
  at: number;
}

/** Key of a host identity (base64url: any identity, only key-safe characters). */
export const keyOf = (host: string): string => `h.${Buffer.from(host).toString('base64url') || '_'}`;
export const hostOf = (key: string): string => Buffer.from(key.slice(2), 'base64url').toString();
/** Key of an exposed tool name (naming `bare`). */
export const nameKey = (name: string): string => `n.${Buffer.from(name).toString('base64url')}`;

/**
 * How long one request to the bucket may take, ms (the client's default is 5 s): a request sent
 * while the bucket has no leader is never answered, so a short one lets a claim's next try reach
 * the new leader soon after it is elected, within the claim time.
 */
export const REQUEST_MS = 1_000;

/** Open the lease bucket, creating it (with `replicas`) when missing; read through its leader (`allow_direct` off). */
export const createBucket = (nc: NatsConnection, bucket: string, replicas: number): Promise<KV> =>
  new Kvm(jetstream(nc, { timeout: REQUEST_MS })).create(bucket, { history: 1, replicas, allow_direct: false });

/** When the bucket's stream was created (a bucket created anew has another time). */
export const createdOf = async (kv: KV): Promise<string> => (await kv.status()).streamInfo.created;

/** Whether a bucket request failed because its stream does not exist (any more). */
export const bucketGone = (error: unknown): boolean => error instanceof Error && (error.name === 'StreamNotFoundError' || error.message === 'stream not found');

/** What {@link writeBack} needs of the leases. */
export interface WriteBackDeps {
  node: string;
  logger: Logger;
  /** Whether a session of `host` is bound on this node. */
  holds: (host: string) => boolean;
  /** This node's session of `host` lost its lease: close it. */
  lost: (host: string) => void;
}

/**
 * Into a bucket created anew: the lease of each host of `mine` (host → revision of this node's
 * lease) still bound here, unless another node took its key meanwhile — then that session here is
 * closed (`lost`), as for a lease that moved. `mine` is updated. Never rejects (a host whose key
 * cannot be read or written is logged and left to its next claim).
 */
export async function writeBack(kv: KV, mine: Map<string, number>, deps: WriteBackDeps): Promise<void> {
  const { node, logger, holds, lost } = deps;
  for (const host of [...mine.keys()]) {
    if (!holds(host)) continue;
    const key = keyOf(host);
    try {
      let entry = await kv.get(key);
      if (entry === null || entry.operation !== 'PUT') {
        try {
          mine.set(host, await kv.create(key, encode({ node, at: Date.now() } satisfies Lease)));
          continue;
        } catch {
          entry = await kv.get(key); // another node created it meanwhile
        }
      }
      if (entry !== null && entry.operation === 'PUT' && decode<Lease>(entry.value)?.node === node) mine.set(host, entry.revision);
      else if (entry !== null) {
        mine.delete(host);
        lost(host);
      }
    } catch (error) {
      logger.warn({ err: error, host }, 'cluster: could not write back a host identity lease; its next claim takes it');
    }
  }
}
