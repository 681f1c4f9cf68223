/**
 * Tool name leases (naming `bare`, DESIGN §10): one key per exposed tool name in the host identity
 * lease bucket (`lease-bucket.ts`), naming the host (and its node) that advertised it first. Taken
 * and given up through the host identity leases (`leases.ts`), whose bucket and retry they use.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from '../options.js';
import { nameKey } from './lease-bucket.js';
import { decode, encode } from './wire.js';

/** What the name leases use of the host identity leases (`Leases`). */
export interface NameLeaseBucket {
  deps: { node: string; logger: Logger };
  /** The bucket as open now (`undefined`: not open yet); read at each try (it may have been created anew). */
  kv: () => KV | undefined;
  /** Run `attempt` until it resolves, pausing between tries, within the claim time (`Leases`' retry). */
  retry: (what: string, attempt: () => Promise<void>) => Promise<void>;
}

/**
 * Take the names `names` for `host` (naming `bare`: a name belongs to the first host of the
 * cluster that advertised it while it stays). Resolves with the names another host holds, → that
 * host. Never rejects: a name whose lease cannot be read or written is granted (logged).
 */
export async function claimNames(bucket: NameLeaseBucket, host: string, names: string[]): Promise<Map<string, string>> {
  const taken = new Map<string, string>();
  if (bucket.kv() === undefined) return taken;
  const value = encode({ host, node: bucket.deps.node });
  await Promise.all(
    names.map(async (name) => {
      const key = nameKey(name);
      try {
        await bucket.retry(name, async () => {
          const kv = bucket.kv()!;
          const entry = await kv.get(key);
          const lease = entry !== null && entry.operation === 'PUT' ? decode<{ host?: string; node?: string }>(entry.value) : undefined;
          if (lease?.host === host && lease.node === bucket.deps.node) return;
          // Another host's name; the same host's name held by another node moves here with the host.
          if (lease?.host !== undefined && lease.host !== host) return void taken.set(name, lease.host);
          if (entry === null) await kv.create(key, value);
          else await kv.update(key, value, entry.revision);
        });
      } catch (error) {
        bucket.deps.logger.warn({ err: error, host, name }, 'cluster: could not take a tool name lease; the name is granted on this node');
      }
    }),
  );
  return taken;
}

/** Give up `host`'s leases of `names` (those it still holds). Never rejects. */
export async function releaseNames(bucket: NameLeaseBucket, host: string, names: Iterable<string>): Promise<void> {
  const kv = bucket.kv();
  if (kv === undefined) return;
  await Promise.all(
    [...names].map(async (name) => {
      try {
        const entry = await kv.get(nameKey(name));
        const lease = entry !== null && entry.operation === 'PUT' ? decode<{ host?: string; node?: string }>(entry.value) : undefined;
        if (entry === null || lease?.host !== host || lease.node !== bucket.deps.node) return;
        await kv.delete(nameKey(name), { previousSeq: entry.revision });
      } catch {
        // taken meanwhile, or unreachable
      }
    }),
  );
}
