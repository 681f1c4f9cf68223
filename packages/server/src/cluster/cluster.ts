/**
 * A server node in a cluster (DESIGN §10): wires the NATS bus, membership and the cluster-wide tool
 * list ({@link Peers}), calls to hosts on other nodes ({@link RemoteCalls}), calls from other nodes
 * to hosts here ({@link CallService}) and host identity leases ({@link Leases}) into the router.
 * The router, executor and MCP door are the single-node ones, unchanged.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../options.js';
import type { Executor } from '../executor/executor.js';
import type { Router } from '../router/router.js';
import { Batcher } from './batch.js';
import { CallService } from './call-service.js';
import { ClusterError } from './errors.js';
import { Leases } from './leases.js';
import { connectBus, type NatsBus } from './nats-bus.js';
import { type ClusterConfig, subjects } from './options.js';
import { Peers } from './peers.js';
import { RemoteCalls } from './remote-calls.js';
import { decode, encode } from './wire.js';

/**
 * How long start-up waits for the lease bucket to open, ms: a NATS cluster that has just started
 * (or lost a server) answers no JetStream request until it has elected a leader. The node then
 * joins without it and keeps trying; hosts that connect meanwhile bind without a lease (logged).
 */
const LEASE_BUCKET_WAIT_MS = 15_000;

export interface ClusterDeps {
  router: Router;
  executor: Executor;
  logger: Logger;
  /** The server's default call deadline, ms. */
  deadlineMs: number;
  /** The server's cancel grace, ms: how long past a deadline the host's node may take to answer. */
  cancelGraceMs: number;
  /** Per-stream capture cap, bytes (head + tail). */
  capBytes: number;
  /** Largest frame taken from a host (`maxPayload`), bytes: also the largest answer taken from another node. */
  maxPayload: number;
}

/** This node's membership in a cluster. */
export class ClusterNode {
  readonly node: string;
  readonly #bus: NatsBus;
  readonly #peers: Peers;
  readonly #calls: RemoteCalls;
  readonly #service: CallService;
  readonly #leases: Leases | undefined;
  readonly #router: Router;
  readonly #offEvict: () => void;
  readonly #offStop: () => void;
  readonly #executor: Executor;
  /** Tool names (naming `bare`) whose leases this node's hosts hold. */
  readonly #names = new Map<string, Set<string>>();
  readonly #onLocalChanged: (host: string) => void;
  #closing: Promise<void> | undefined;

  private constructor(config: ClusterConfig, bus: NatsBus, deps: ClusterDeps, leases: Leases | undefined) {
    const { router, logger } = deps;
    const names = subjects(config.name);
    this.node = config.node;
    this.#bus = bus;
    this.#router = router;
    this.#leases = leases;
    // One for the calls this node sends and the answers it gives: what goes to one node in a turn is one message.
    const batcher = new Batcher(bus);
    this.#calls = new RemoteCalls({
      bus,
      batcher,
      subjects: names,
      node: config.node,
      deadlineMs: deps.deadlineMs,
      graceMs: deps.cancelGraceMs + config.requestTimeoutMs,
      capBytes: deps.capBytes,
      maxAnswerBytes: deps.maxPayload,
      logger,
    });
    this.#service = new CallService({ bus, batcher, subjects: names, node: config.node, router, logger });
    this.#peers = new Peers({
      bus,
      subjects: names,
      node: config.node,
      boot: randomBytes(8).toString('hex'),
      router,
      calls: this.#calls,
      heartbeatMs: config.heartbeatMs,
      requestTimeoutMs: config.requestTimeoutMs,
      logger,
    });
    this.#offEvict = bus.subscribe(names.node(config.node, 'evict'), (data, reply) => {
      const host = decode<{ host?: string }>(data)?.host;
      if (typeof host === 'string' && router.evict(host)) logger.info({ host }, 'cluster: host identity taken by another node; its session here closed (4000)');
      if (reply !== undefined) bus.publish(reply, encode({ ok: true }));
    });
    // stop(agent) on any node stops that agent's calls on every node.
    this.#executor = deps.executor;
    this.#offStop = bus.subscribe(names.stop, (data) => {
      const stop = decode<{ agent?: string; node?: string }>(data);
      if (typeof stop?.agent === 'string' && stop.node !== config.node) deps.executor.stopHere(stop.agent);
    });
    deps.executor.onStop = (agent) => bus.publish(names.stop, encode({ agent, node: config.node }));
    this.#onLocalChanged = (host) => {
      this.#peers.changed(host);
      const link = router.linkOf(host);
      const here = link !== undefined && link.node === undefined;
      if (leases !== undefined && !here) void leases.release(host);
      if (leases !== undefined && this.#names.has(host)) {
        // Names this node's host held and no longer lists (re-advertised without them, or gone).
        const held = this.#names.get(host)!;
        const now = new Set(here ? router.namesOf(host) : []);
        const dropped = [...held].filter((n) => !now.has(n));
        if (now.size === 0) this.#names.delete(host);
        else this.#names.set(host, now);
        if (dropped.length > 0) void leases.releaseNames(host, dropped);
      }
    };
    router.on('localChanged', this.#onLocalChanged);
    if (leases !== undefined) {
      router.claim = (host) => leases.claim(host);
      router.claimNames = async (host, wanted) => {
        const taken = await leases.claimNames(host, wanted);
        const held = this.#names.get(host) ?? new Set<string>();
        for (const name of wanted) if (!taken.has(name)) held.add(name);
        this.#names.set(host, held);
        return taken;
      };
    }
  }

  /**
   * Connect to NATS and join: resolves once the lease bucket is open (at most 15 s: without
   * JetStream the node runs without leases, logged, and keeps trying to open it) and the other
   * nodes' hosts are read (one heartbeat period at least, 2 × `heartbeatMs` at most; see
   * {@link Peers.initialSync}). Rejects with a {@link ClusterError} when no NATS server can be
   * reached, the credentials are refused, or a live node already has this node's id.
   */
  static async start(config: ClusterConfig, deps: ClusterDeps): Promise<ClusterNode> {
    const { logger, router } = deps;
    let bus: NatsBus;
    try {
      bus = await connectBus(config, logger);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new ClusterError(`cannot join cluster "${config.name}": no NATS server of ${config.nats.join(', ')} accepted the connection (${why})`, { cause: error });
    }
    const names = subjects(config.name);
    const leases = await Leases.open(
      bus.connection,
      names.leaseBucket,
      {
        node: config.node,
        logger,
        claimMs: config.claimMs,
        holds: (host) => {
          const link = router.linkOf(host);
          return link !== undefined && link.node === undefined;
        },
        evict: async (node, host) => {
          try {
            await bus.request(names.node(node, 'evict'), encode({ host }), config.requestTimeoutMs);
          } catch (error) {
            logger.warn({ err: error, node, host }, 'cluster: the node that held a host identity did not confirm closing its session');
          }
        },
        lost: (host) => {
          if (router.evict(host)) logger.info({ host }, 'cluster: host identity lease moved to another node; its session here closed (4000)');
        },
      },
      config.kvReplicas,
      LEASE_BUCKET_WAIT_MS,
    );
    const node = new ClusterNode(config, bus, deps, leases);
    // Before the port opens: a caller's first call to a host on another node finds its tool (not 127).
    try {
      await node.#peers.initialSync();
    } catch (error) {
      await node.close();
      const why = error instanceof Error ? error.message : String(error);
      throw new ClusterError(`cannot join cluster "${config.name}": ${why}`, { cause: error });
    }
    logger.info({ cluster: config.name, node: config.node, leases: leases.ready, peers: node.peers().length }, 'cluster: joined');
    return node;
  }

  /** The other nodes heard from within the loss bound. */
  peers(): string[] {
    return this.#peers.nodes();
  }

  /** Leave: remote hosts leave this router, calls to them settle 69, calls from other nodes stop; then NATS closes. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#router.off('localChanged', this.#onLocalChanged);
      this.#router.claim = undefined;
      this.#router.claimNames = undefined;
      this.#offEvict();
      this.#offStop();
      this.#executor.onStop = undefined;
      this.#peers.close();
      this.#calls.close();
      this.#service.close();
      this.#leases?.close();
      await this.#bus.close();
    })();
    return this.#closing;
  }
}
