/**
 * Cluster options (`ToolwireServerOptions.cluster`, `serve --nats URL`): several server nodes act
 * as one over NATS (DESIGN §10). Without them a server is one node with nothing new.
 */

/** Credentials for the NATS servers (one kind at most). No credential ever reaches a log. */
export interface NatsCredentials {
  /** A NATS token. */
  token?: string;
  /** User and password. */
  user?: string;
  pass?: string;
  /** A `.creds` file (JWT + nkey seed), as `nsc` writes it. */
  credsFile?: string;
}

/** TLS to NATS: PEM file paths; `ca` alone verifies the server, `cert` + `key` add a client certificate. */
export interface NatsTls {
  ca?: string;
  cert?: string;
  key?: string;
}

/** Join a cluster of server nodes over NATS. */
export interface ClusterOptions {
  /** NATS server URLs, e.g. `["nats://10.0.0.5:4222"]`; at least one. */
  nats: string[];
  /**
   * Cluster name: every subject and key-value bucket is namespaced by it (`toolwire.<name>.…`),
   * so two clusters can share one NATS. `[A-Za-z0-9_-]{1,32}`, default `default`.
   */
  name?: string;
  /** This node's id, unique in the cluster: `[A-Za-z0-9_-]{1,64}`; default a random id. */
  node?: string;
  credentials?: NatsCredentials;
  tls?: NatsTls;
  /**
   * How often a node announces itself, ms (default 1000, 100–60000). A node not heard from for
   * 2 × this is lost: its hosts' tools leave every other node and calls to them settle 69.
   */
  heartbeatMs?: number;
  /** How long a request to another node (state, evict) may take, ms (default 2000). */
  requestTimeoutMs?: number;
  /**
   * Replicas of the lease key-value bucket when this cluster creates it (1–5, default 1): 3 on a
   * NATS cluster of three or more servers, so the leases survive the loss of one. A bucket that
   * already exists keeps the replicas it was made with.
   */
  kvReplicas?: number;
  /**
   * How long a host's hello waits for its identity lease while the bucket does not answer (it is
   * electing a leader), ms (default 8000, 100–60000; keep it under the hello timeout,
   * `helloTimeoutMs`). Past it the host binds on this node and takes the lease, closing the session
   * another node held, once the bucket answers.
   */
  claimMs?: number;
}

/** {@link ClusterOptions} with defaults applied and checked. */
export interface ClusterConfig {
  nats: string[];
  name: string;
  node: string;
  credentials: NatsCredentials;
  tls: NatsTls | undefined;
  heartbeatMs: number;
  requestTimeoutMs: number;
  kvReplicas: number;
  claimMs: number;
}

const NAME = /^[A-Za-z0-9_-]{1,32}$/;
const NODE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Check `options` and apply the defaults.
 * @throws TypeError for a malformed option; RangeError for a number out of range
 */
export function resolveClusterConfig(options: ClusterOptions, randomNode: () => string): ClusterConfig {
  if (typeof options !== 'object' || options === null) throw new TypeError('cluster: expected an object');
  const { nats } = options;
  if (!Array.isArray(nats) || nats.length === 0 || !nats.every((u) => typeof u === 'string' && /^(nats|tls|wss?):\/\//.test(u))) {
    throw new TypeError('cluster.nats: expected one or more nats:// (or tls://) URLs');
  }
  const name = options.name ?? 'default';
  if (!NAME.test(name)) throw new TypeError(`cluster.name: expected [A-Za-z0-9_-]{1,32}, got ${JSON.stringify(name)}`);
  const node = options.node ?? randomNode();
  if (!NODE.test(node)) throw new TypeError(`cluster.node: expected [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(node)}`);
  const heartbeatMs = options.heartbeatMs ?? 1000;
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 100 || heartbeatMs > 60_000)
    throw new RangeError(`cluster.heartbeatMs: expected an integer 100-60000, got ${heartbeatMs}`);
  const requestTimeoutMs = options.requestTimeoutMs ?? 2000;
  if (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 10 || requestTimeoutMs > 60_000)
    throw new RangeError(`cluster.requestTimeoutMs: expected an integer 10-60000, got ${requestTimeoutMs}`);
  const kvReplicas = options.kvReplicas ?? 1;
  if (!Number.isInteger(kvReplicas) || kvReplicas < 1 || kvReplicas > 5) throw new RangeError(`cluster.kvReplicas: expected an integer 1-5, got ${kvReplicas}`);
  const claimMs = options.claimMs ?? 8000;
  if (!Number.isInteger(claimMs) || claimMs < 100 || claimMs > 60_000) throw new RangeError(`cluster.claimMs: expected an integer 100-60000, got ${claimMs}`);
  return { nats: [...nats], name, node, credentials: { ...options.credentials }, tls: options.tls, heartbeatMs, requestTimeoutMs, kvReplicas, claimMs };
}

/** The subjects of one cluster (`toolwire.<cluster>.…`). */
export function subjects(cluster: string) {
  const root = `toolwire.${cluster}`;
  return {
    /** Every node's heartbeat: `{node, version, boot}`. */
    heartbeat: `${root}.heartbeat`,
    /** A stop of one agent's calls, for every node: `{agent, node}`. */
    stop: `${root}.stop`,
    /** Requests to node `n`: `state` (its hosts and tools), `call`, `cancel`, `ack` (output credit), `evict`. */
    node: (n: string, what: 'state' | 'call' | 'cancel' | 'ack' | 'evict') => `${root}.node.${n}.${what}`,
    /** Where node `n` receives the answers to its calls. */
    replies: (n: string) => `${root}.reply.${n}`,
    /** The key-value bucket of host identity leases. */
    leaseBucket: `toolwire-${cluster}-hosts`,
  };
}
export type Subjects = ReturnType<typeof subjects>;
