/**
 * Cluster membership and the cluster-wide tool list (DESIGN §10). Every node publishes a heartbeat
 * every `heartbeatMs` carrying the version of its local host set; a node that sees a version it has
 * not applied fetches that node's hosts (`state`, in pages) and binds each as a
 * {@link RemoteHostLink} in its router, which advertises the host's tools as for a local host (same
 * naming, limits and schema checks). A node not heard from for 2 × `heartbeatMs` is lost: its hosts
 * leave, and calls to them settle 69.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { type RemoteCalls, RemoteHostLink } from './remote-calls.js';
import { StatePages } from './state-pages.js';
import { type Heartbeat, type StatePage, type StateRequest, decode, encode } from './wire.js';

/** Hosts bound or re-advertised per turn while applying a node's hosts (calls run between turns). */
const APPLY_PER_TURN = 256;

/** A tool set as fetched: the tools (one array shared by every host that has it) and its digest. */
interface ToolSet {
  tools: unknown[];
  key: string;
}

/** A host of another node as fetched. */
interface FetchedHost {
  host: string;
  remote?: string;
  connectedAt: number;
  set: ToolSet;
}

interface Peer {
  boot: string;
  /** The version announced last, and the one whose hosts are bound here. */
  announced: number;
  applied: number;
  lastSeen: number;
  syncing: boolean;
  /** A first fetch of its hosts has ended (applied, or failed: retried on its next heartbeat). */
  tried: boolean;
  /** Each bound host and the digest of the tool set it was advertised with. */
  links: Map<string, { link: RemoteHostLink; tools: string }>;
  /**
   * Its hosts not bound here because another session of the identity won (one on this node, or a
   * newer one on a third node): read again when that session leaves, since that node's version
   * does not move then.
   */
  shadowed: Set<string>;
  /** Fetch every host of it again (not only the changes since `applied`): a shadowed host's winner left. */
  refetch: boolean;
}

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

/** The other nodes of the cluster, and this node's announcements to them. */
export class Peers {
  readonly #deps: PeersDeps;
  readonly #peers = new Map<string, Peer>();
  readonly #unsubscribe: (() => void)[];
  readonly #timer: NodeJS.Timeout;
  #version = 0;
  /** This node's hosts as `state` pages (snapshots by version). */
  readonly #pages: StatePages;
  #announceQueued = false;
  /** When `#tick` last ran, ms since the epoch. */
  #lastTick = Date.now();
  #closed = false;
  /** The wait of {@link initialSync}, while it runs. */
  #initial: { heardAll: boolean; done: () => void } | undefined;

  constructor(deps: PeersDeps) {
    this.#deps = deps;
    const { bus, subjects, node } = deps;
    this.#pages = new StatePages(() => deps.router.localHosts(), deps.boot);
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
   */
  initialSync(): Promise<void> {
    const { heartbeatMs, logger } = this.#deps;
    return new Promise((resolve) => {
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
      const done = (): void => {
        clearTimeout(heard);
        clearTimeout(bound);
        this.#initial = undefined;
        resolve();
      };
      this.#initial = { heardAll: false, done };
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
    this.#uncovered(host);
  }

  /**
   * `host`'s session bound here left (closed, or evicted when another node took its identity): a
   * node whose session of `host` was skipped while this one stayed is read again, so its session
   * is bound here now and not when that node next changes.
   */
  #uncovered(host: string): void {
    if (this.#closed || this.#deps.router.linkOf(host) !== undefined) return;
    for (const [node, peer] of this.#peers) {
      if (!peer.shadowed.has(host)) continue;
      peer.refetch = true;
      void this.#sync(node, peer);
    }
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
    if (beat === undefined || typeof beat.node !== 'string' || beat.node === this.#deps.node || typeof beat.version !== 'number') return;
    let peer = this.#peers.get(beat.node);
    if (peer !== undefined && peer.boot !== beat.boot) {
      this.#drop(beat.node, `node ${beat.node} restarted`);
      peer = undefined;
    }
    if (peer === undefined) {
      peer = {
        boot: String(beat.boot),
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
    if (peer.applied !== peer.announced || peer.refetch) void this.#sync(beat.node, peer);
  }

  /** Fetch `node`'s hosts (all pages) and apply them; again while its version moved (or a refetch was asked) meanwhile. */
  async #sync(node: string, peer: Peer): Promise<void> {
    if (peer.syncing) return;
    peer.syncing = true;
    let full = false;
    try {
      while (!this.#closed && this.#peers.get(node) === peer && (peer.applied !== peer.announced || peer.refetch)) {
        full = peer.refetch;
        peer.refetch = false;
        const state = await this.#fetch(node, peer, full);
        if (state === undefined || this.#peers.get(node) !== peer) return;
        if (state.gone === undefined) await this.#apply(node, peer, state.hosts);
        else await this.#applyChanges(node, peer, state.hosts, state.gone);
        peer.applied = state.version;
        full = false;
      }
    } catch (error) {
      this.#deps.logger.warn({ err: error, node }, 'cluster: could not read the hosts of a node; retrying on its next heartbeat');
    } finally {
      // A full fetch that did not end is asked again (at the next heartbeat).
      if (full) peer.refetch = true;
      peer.syncing = false;
      peer.tried = true;
      this.#checkInitial();
    }
  }

  /**
   * `node`'s hosts: the changes since the version applied here (`gone` set) when its node answers
   * them in one page and `full` is not set, else every page, all of one version (again from the
   * start when it was dropped meanwhile).
   */
  async #fetch(node: string, peer: Peer, full: boolean, tries = 3): Promise<{ version: number; hosts: FetchedHost[]; gone?: string[] } | undefined> {
    const hosts: FetchedHost[] = [];
    const sets = new Map<string, ToolSet>();
    let version: number | undefined;
    for (let offset: number | undefined = 0; offset !== undefined;) {
      const since = version === undefined && !full && peer.applied >= 0 && tries === 3 ? peer.applied : undefined;
      const request: StateRequest = { offset, ...(version !== undefined && { version }), ...(since !== undefined && { since }) };
      const data = await this.#deps.bus.request(this.#deps.subjects.node(node, 'state'), encode(request), this.#deps.requestTimeoutMs);
      const page = decode<StatePage>(data);
      if (page === undefined || !Array.isArray(page.hosts) || !Array.isArray(page.sets)) return undefined;
      // Another boot of that node answered: its heartbeat drops this peer.
      if (page.boot !== peer.boot) return undefined;
      if (version !== undefined && page.version !== version) return tries > 1 ? this.#fetch(node, peer, full, tries - 1) : undefined;
      version = page.version;
      const delta = since !== undefined && page.since === since && Array.isArray(page.gone);
      // Equal sets share one array across pages (the router prepares a shared array once).
      const pageSets = page.sets.map((tools) => {
        if (!Array.isArray(tools)) return undefined;
        const key = createHash('sha256').update(JSON.stringify(tools)).digest('base64');
        let set = sets.get(key);
        if (set === undefined) sets.set(key, (set = { tools, key }));
        return set;
      });
      for (const entry of page.hosts) {
        const set = typeof entry?.set === 'number' ? pageSets[entry.set] : undefined;
        if (typeof entry?.host !== 'string' || set === undefined) continue;
        hosts.push({ host: entry.host, ...(typeof entry.remote === 'string' && { remote: entry.remote }), connectedAt: Number(entry.connectedAt), set });
      }
      if (delta) return { version, hosts, gone: page.gone!.filter((h): h is string => typeof h === 'string') };
      offset = page.next;
    }
    return { version: version ?? 0, hosts };
  }

  /** Every host of `node` (a full fetch): bind or re-advertise each, and unbind those not among them. */
  async #apply(node: string, peer: Peer, hosts: FetchedHost[]): Promise<void> {
    const seen = new Set<string>();
    let done = 0;
    peer.shadowed.clear(); // every host is judged again
    for (const entry of hosts) {
      if (++done % APPLY_PER_TURN === 0) await nextTurn();
      if (this.#peers.get(node) !== peer) return;
      seen.add(entry.host);
      await this.#applyHost(node, peer, entry);
    }
    for (const host of [...peer.links.keys()]) if (!seen.has(host)) this.#unbind(peer, host);
  }

  /** The hosts of `node` changed since the version applied here: `hosts` as they are now, `gone` left. */
  async #applyChanges(node: string, peer: Peer, hosts: FetchedHost[], gone: string[]): Promise<void> {
    let done = 0;
    for (const host of gone) {
      peer.shadowed.delete(host);
      this.#unbind(peer, host);
    }
    for (const entry of hosts) {
      if (++done % APPLY_PER_TURN === 0) await nextTurn();
      if (this.#peers.get(node) !== peer) return;
      await this.#applyHost(node, peer, entry);
    }
  }

  async #applyHost(node: string, peer: Peer, entry: FetchedHost): Promise<void> {
    const { router, calls } = this.#deps;
    const { tools, key } = entry.set;
    const current = router.linkOf(entry.host);
    // A session of this node, or a newer one on a third node, wins over a stale announcement.
    if (current !== undefined && current.node !== node && (current.node === undefined || current.connectedAt.getTime() > entry.connectedAt)) {
      peer.shadowed.add(entry.host);
      return;
    }
    peer.shadowed.delete(entry.host);
    const known = peer.links.get(entry.host);
    // The same session as bound here (a new session of the identity on that node is bound anew).
    if (known !== undefined && current === known.link && known.link.connectedAt.getTime() === entry.connectedAt) {
      if (known.tools === key) return;
      known.tools = key;
      await router.advertise(known.link, tools);
      return;
    }
    const link = new RemoteHostLink(calls, node, entry.host, new Date(entry.connectedAt), entry.remote);
    peer.links.set(entry.host, { link, tools: key });
    router.bind(link);
    // A new session with no tools has (almost always) said hello and not advertised yet: bound
    // alone, its departed names still answer 69 "not connected" here, as on its own node, not 127.
    if (tools.length > 0) await router.advertise(link, tools);
  }

  /** `host` of `peer` left: unbound here (when still its link), its calls end by their node's answer. */
  #unbind(peer: Peer, host: string): void {
    const known = peer.links.get(host);
    if (known === undefined) return;
    peer.links.delete(host);
    known.link.replace();
    this.#deps.router.unbind(known.link);
    this.#uncovered(host);
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
    for (const { link } of peer.links.values()) {
      link.replace();
      this.#deps.router.unbind(link);
    }
    for (const host of peer.links.keys()) this.#uncovered(host);
    this.#deps.calls.failNode(node, reason);
    this.#deps.logger.warn({ node, hosts: peer.links.size }, `cluster: ${reason}`);
  }
}
