/** `listen()` could not join the cluster (no NATS server reachable, refused credentials). */
export class ClusterError extends Error {
  override readonly name = 'ClusterError';
}
