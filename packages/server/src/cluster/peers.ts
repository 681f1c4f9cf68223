/**
 * Cluster membership and the cluster-wide tool list (DESIGN §10). Every node publishes a heartbeat
 * every `heartbeatMs` carrying the version of its local host set; a node that sees a version it has
 * not applied fetches that node's hosts (`state`, in pages: `peer-state.ts`) and binds each as a
 * `RemoteHostLink` in its router, which advertises the host's tools as for a local host (same
 * naming, limits and schema checks). A node not heard from for 2 × `heartbeatMs` is lost: its hosts
 * leave, and calls to them settle 69.
 */
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import type { Bus } from './bus.js';
import { ClusterError } from './errors.js';
import type { Subjects } from './options.js';
import { type PeerHosts, PeerState } from './peer-state.js';
import type { RemoteCalls } from './remote-calls.js';
import { StatePages } from './state-pages.js';
import { type Heartbeat, type StateRequest, decode, encode } from './wire.js';

/** Another node of the cluster: membership, and its hosts as read here. */
interface Peer extends PeerHosts {
  lastSeen: number;
}

/** What {@link Peers} needs of the cluster node it runs in. */
export interface PeersDeps {
  bus: Bus;
  subjects: Subjects;
  node: string;
  boot: string;
  router: Router;
  calls: RemoteCalls;
  heartbeatMs: number;
  requestTimeoutMs: number;
  logger: Logger;
}

const encoder = new TextEncoder();
/** Other boots of this node's id remembered for logging once each. */
const MAX_TWINS = 16;

/** The other nodes of the cluster, and this node's announcements to them. */
export class Peers {
  readonly #deps: PeersDeps;
  readonly #peers = new Map<string, Peer>();
  readonly #unsubscribe: (() => void)[];
  readonly #timer: NodeJS.Timeout;
  #version = 0;
  /** This node's hosts as `state` pages (snapshots by version). */
  readonly #pages: StatePages;
  /** Fetches the other nodes' hosts and applies them. */
  readonly #state: PeerState;
  #announceQueued = false;
  /** When `#tick` last ran, ms since the epoch. */
  #lastTick = Date.now();
  #closed = false;
  /** The wait of {@link initialSync}, while it runs. */
  #initial: { heardAll: boolean; done: () => void; fail: (error: Error) => void } | undefined;
  /** Other boots heard announcing this node's id (logged once each; at most {@link MAX_TWINS} kept). */
  readonly #twins = new Set<string>();

  constructor(deps: PeersDeps) {
    this.#deps = deps;
    const { bus, subjects, node } = deps;
    this.#pages = new StatePages(
      () => deps.router.localHosts(),
      (host) => {
        const link = deps.router.linkOf(host);
        if (link === undefined || link.node !== undefined) return undefined;
        return { host, remote: link.remote, connectedAt: link.connectedAt, tools: deps.router.toolsOf(host).map((t) => t.spec) };
      },
      deps.boot,
    );
    this.#state = new PeerState({
      bus,
      subjects,
      router: deps.router,
      calls: deps.calls,
      requestTimeoutMs: deps.requestTimeoutMs,
      logger: deps.logger,
      peers: this.#peers,
      closed: () => this.#closed,
      tried: () => this.#checkInitial(),
    });
    this.#unsubscribe = [
      bus.subscribe(subjects.heartbeat, (data) => this.#onHeartbeat(data)),
      bus.subscribe(subjects.node(node, 'state'), (data, reply) => this.#onState(data, reply)),
    ];
    this.#timer = setInterval(() => this.#tick(), deps.heartbeatMs);
    this.#publish();
  }

  /**
   * Resolves once this node has read the hosts of the other nodes: one heartbeat period has passed
   * (every live node announces itself within it, and answers a new node's first heartbeat at once)
   * and a first fetch of each node heard from has ended; or after 2 × `heartbeatMs` at most (a
   * node whose hosts are not read by then is logged, and its tools arrive when they are).
   * Rejects with a {@link ClusterError} when a live node already announces this node's id.
   */
  initialSync(): Promise<void> {
    const { heartbeatMs, logger } = this.#deps;
    return new Promise((resolve, reject) => {
      const heard = setTimeout(() => {
        if (this.#initial === undefined) return;
        this.#initial.heardAll = true;
        this.#checkInitial();
      }, heartbeatMs);
      const bound = setTimeout(() => {
        const unread = [...this.#peers].filter(([, peer]) => !peer.tried).map(([node]) => node);
        logger.info({ nodes: unread, boundMs: 2 * heartbeatMs }, 'cluster: not every node’s hosts read at start-up; their tools arrive once read');
        done();
      }, 2 * heartbeatMs);
      const settle = (error?: Error): void => {
        clearTimeout(heard);
        clearTimeout(bound);
        this.#initial = undefined;
        if (error === undefined) resolve();
        else reject(error);
      };
      const done = (): void => settle();
      this.#initial = { heardAll: false, done, fail: settle };
    });
  }

  #checkInitial(): void {
    const initial = this.#initial;
    if (initial === undefined || (!initial.heardAll && !this.#closed)) return;
    if (this.#closed || [...this.#peers.values()].every((peer) => peer.tried)) initial.done();
  }

  /** The nodes heard from within the loss bound. */
  nodes(): string[] {
    return [...this.#peers.keys()];
  }

  /** This node's host `host` bound, advertised or left: announce it (coalesced to one heartbeat per turn). */
  changed(host: string): void {
    this.#version += 1;
    this.#pages.note(host, this.#version);
    this.#announce();
    this.#state.uncovered(host);
  }

  /** Publish a heartbeat now (coalesced to one per turn). */
  #announce(): void {
    if (this.#announceQueued || this.#closed) return;
    this.#announceQueued = true;
    setImmediate(() => {
      this.#announceQueued = false;
      if (!this.#closed) this.#publish();
    });
  }

  /** Stop announcing and drop every remote host (their calls are settled by `RemoteCalls.close`). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#checkInitial();
    for (const off of this.#unsubscribe.splice(0)) off();
    for (const node of [...this.#peers.keys()]) this.#drop(node, 'server shutting down');
  }

  #publish(): void {
    const beat: Heartbeat = { node: this.#deps.node, version: this.#version, boot: this.#deps.boot };
    this.#deps.bus.publish(this.#deps.subjects.heartbeat, encode(beat));
  }

  #tick(): void {
    this.#publish();
    const bound = 2 * this.#deps.heartbeatMs;
    const now = Date.now();
    // This node's own event loop stalled (a tick came late): the heartbeats that arrived meanwhile
    // are still unread, so judge the other nodes at the next tick, not now.
    const late = now - this.#lastTick > 1.5 * this.#deps.heartbeatMs;
    this.#lastTick = now;
    if (late) return;
    for (const [node, peer] of this.#peers) {
      if (now - peer.lastSeen > bound) this.#drop(node, `node ${node} was lost (no heartbeat for ${bound} ms)`);
    }
  }

  #onHeartbeat(data: Uint8Array): void {
    const beat = decode<Heartbeat>(data);
    if (beat === undefined || typeof beat.node !== 'string' || typeof beat.boot !== 'string' || typeof beat.version !== 'number') {
      this.#deps.logger.warn({}, 'cluster: unreadable heartbeat dropped');
      return;
    }
    if (beat.node === this.#deps.node) {
      if (beat.boot !== this.#deps.boot) this.#onTwin(beat.boot);
      return;
    }
    let peer = this.#peers.get(beat.node);
    if (peer !== undefined && peer.boot !== beat.boot) {
      this.#drop(beat.node, `node ${beat.node} restarted`);
      peer = undefined;
    }
    if (peer === undefined) {
      peer = {
        boot: beat.boot,
        announced: beat.version,
        applied: -1,
        lastSeen: Date.now(),
        syncing: false,
        tried: false,
        links: new Map(),
        shadowed: new Set(),
        refetch: false,
      };
      this.#peers.set(beat.node, peer);
      this.#deps.logger.info({ node: beat.node }, 'cluster: node joined');
      // A node that just started waits for the others' hosts before it opens its port: announce at once.
      this.#announce();
    }
    peer.lastSeen = Date.now();
    peer.announced = beat.version;
    if (peer.applied !== peer.announced || peer.refetch) void this.#state.sync(beat.node, peer);
  }

  /**
   * Another live process announces this node's id (two nodes given the same `node`): both would take
   * that id's calls and the other nodes would drop and re-read it at every heartbeat. A node still
   * joining gives up ({@link initialSync} rejects); a joined one logs it and announces itself at once
   * (once per other boot), so a node starting with its id hears it within its start-up wait.
   */
  #onTwin(boot: string): void {
    const { node, logger } = this.#deps;
    if (this.#initial !== undefined) {
      this.#initial.fail(new ClusterError(`node id "${node}" is already used by a live node; give each node its own id`));
      return;
    }
    // Once per other boot: two joined twins answering each other at once would never stop.
    if (this.#twins.has(boot)) return;
    if (this.#twins.size >= MAX_TWINS) this.#twins.clear();
    this.#twins.add(boot);
    this.#announce();
    logger.error({ node }, 'cluster: another live process announces this node’s id; calls to its hosts from other nodes fail until one of them stops');
  }

  /** Answer a `state` request: one page of this node's hosts. */
  #onState(data: Uint8Array, reply: string | undefined): void {
    if (reply === undefined) return;
    const asked = decode<Partial<StateRequest>>(data);
    const offset = Math.max(0, Math.trunc(Number(asked?.offset ?? 0)) || 0);
    const request: StateRequest = {
      offset,
      ...(typeof asked?.version === 'number' && { version: asked.version }),
      ...(typeof asked?.since === 'number' && { since: asked.since }),
    };
    // Room for the NATS protocol line around the payload.
    const page = this.#pages.page(this.#version, request, this.#deps.bus.maxPayload - 1024);
    this.#deps.bus.publish(reply, encoder.encode(page));
  }

  /** `node` is gone: its hosts leave this node's router and calls to them settle 69. */
  #drop(node: string, reason: string): void {
    const peer = this.#peers.get(node);
    if (peer === undefined) return;
    this.#peers.delete(node);
    this.#state.release(peer, reason);
    this.#deps.calls.failNode(node, reason);
    this.#deps.logger.warn({ node, hosts: peer.links.size }, `cluster: ${reason}`);
  }
}
