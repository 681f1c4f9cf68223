/** `listen()` could not join the cluster (no NATS server reachable, refused credentials). */
export class ClusterError extends Error {
  override readonly name = 'ClusterError';
}

/**
 * A host identity claim lost: another node took the identity's lease (a newer session) while this
 * node's claim waited for the previous owner to close its session. The session that claimed must not
 * bind; it is closed 4000 (REPLACED), as a bound one would be.
 */
export class IdentityTakenError extends Error {
  override readonly name = 'IdentityTakenError';
}
