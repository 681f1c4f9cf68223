/**
 * A cluster's claims on the router (DESIGN §10): the identity lease a host session takes before it
 * binds, and, with naming `bare`, the name leases a host's tools take before they are listed (the
 * first host keeps a name).
 */
import type { ToolCheck } from '../registry/validate-tool.js';

/**
 * Claims a host identity before its session binds (a cluster's identity lease): resolves when the
 * session may bind, rejects with the reason when it may not ({@link IdentityTakenError}: a newer
 * session took the identity meanwhile). Absent on a single node.
 */
export type IdentityClaim = (host: string) => Promise<void>;

/**
 * A host identity claim lost: another node took the identity's lease (a newer session) while this
 * node's claim waited for the previous owner to close its session. The session that claimed must not
 * bind; it is closed 4000 (REPLACED), as a bound one would be.
 */
export class IdentityTakenError extends Error {
  override readonly name = 'IdentityTakenError';
}

/**
 * Claims exposed names cluster-wide (naming `bare`): resolves with the names among `names` that
 * another host holds, → that host. Set by a cluster; never rejects.
 */
export type NameClaim = (host: string, names: string[]) => Promise<Map<string, string>>;

/**
 * For {@link Router.advertise}: refuse each accepted check whose name another host holds (`taken`,
 * name → that host, as a {@link NameClaim} resolved), in place.
 */
export function refuseTakenNames(checks: ToolCheck[], taken: ReadonlyMap<string, string>): void {
  for (let i = 0; i < checks.length; i++) {
    const check = checks[i]!;
    const owner = check.ok ? taken.get(check.tool.name) : undefined;
    if (check.ok && owner !== undefined) {
      checks[i] = {
        ok: false,
        name: check.tool.name,
        reason: `name "${check.tool.name}" is already advertised by host ${owner} on another node (naming bare: the first host keeps a name)`,
      };
    }
  }
}
