/**
 * Cluster membership and the cluster-wide tool list (DESIGN §10). Every node publishes a heartbeat
 * every `heartbeatMs` carrying the version of its local host set; a node that sees a version it has
 * not applied fetches that node's hosts (`state`, in pages) and binds each as a
 * {@link RemoteHostLink} in its router, which advertises the host's tools as for a local host (same
 * naming, limits and schema checks). A node not heard from for 2 × `heartbeatMs` is lost: its hosts
 * leave, and calls to them settle 69.
 */
import type { Logger } from '../options.js';
import type { LocalHost, Router } from '../router/router.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { type RemoteCalls, RemoteHostLink } from './remote-calls.js';
import { type Heartbeat, type StatePage, decode, encode } from './wire.js';

/** Hosts per `state` page. */
const PAGE_HOSTS = 50;

interface Peer {
  boot: string;
  /** The version announced last, and the one whose hosts are bound here. */
  announced: number;
  applied: number;
  lastSeen: number;
  syncing: boolean;
  links: Map<string, { link: RemoteHostLink; tools: string }>;
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

/** The other nodes of the cluster, and this node's announcements to them. */
export class Peers {
  readonly #deps: PeersDeps;
  readonly #peers = new Map<string, Peer>();
  readonly #unsubscribe: (() => void)[];
  readonly #timer: NodeJS.Timeout;
  #version = 0;
  /** This node's hosts as of `version` (what `state` pages are cut from). */
  #snapshot: { version: number; hosts: LocalHost[] } | undefined;
  #announceQueued = false;
  #closed = false;

  constructor(deps: PeersDeps) {
    this.#deps = deps;
    const { bus, subjects, node } = deps;
    this.#unsubscribe = [
      bus.subscribe(subjects.heartbeat, (data) => this.#onHeartbeat(data)),
      bus.subscribe(subjects.node(node, 'state'), (data, reply) => this.#onState(data, reply)),
    ];
    this.#timer = setInterval(() => this.#tick(), deps.heartbeatMs);
    this.#publish();
  }

  /** The nodes heard from within the loss bound. */
  nodes(): string[] {
    return [...this.#peers.keys()];
  }

  /** This node's host set changed: announce it (coalesced to one heartbeat per turn). */
  changed(): void {
    this.#version += 1;
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
      peer = { boot: String(beat.boot), announced: beat.version, applied: -1, lastSeen: Date.now(), syncing: false, links: new Map() };
      this.#peers.set(beat.node, peer);
      this.#deps.logger.info({ node: beat.node }, 'cluster: node joined');
    }
    peer.lastSeen = Date.now();
    peer.announced = beat.version;
    if (peer.applied !== peer.announced) void this.#sync(beat.node, peer);
  }

  /** Fetch `node`'s hosts (all pages) and apply them; again while its version moved meanwhile. */
  async #sync(node: string, peer: Peer): Promise<void> {
    if (peer.syncing) return;
    peer.syncing = true;
    try {
      while (!this.#closed && this.#peers.get(node) === peer && peer.applied !== peer.announced) {
        const state = await this.#fetch(node);
        if (state === undefined || this.#peers.get(node) !== peer) return;
        await this.#apply(node, peer, state.hosts);
        peer.applied = state.version;
      }
    } catch (error) {
      this.#deps.logger.warn({ err: error, node }, 'cluster: could not read the hosts of a node; retrying on its next heartbeat');
    } finally {
      peer.syncing = false;
    }
  }

  async #fetch(node: string): Promise<{ version: number; hosts: StatePage['hosts'] } | undefined> {
    const hosts: StatePage['hosts'] = [];
    let version: number | undefined;
    for (let offset: number | undefined = 0; offset !== undefined;) {
      const data = await this.#deps.bus.request(this.#deps.subjects.node(node, 'state'), encode({ offset }), this.#deps.requestTimeoutMs);
      const page = decode<StatePage>(data);
      if (page === undefined || !Array.isArray(page.hosts)) return undefined;
      if (version !== undefined && page.version !== version) return this.#fetch(node); // moved while paging: start over
      version = page.version;
      hosts.push(...page.hosts);
      offset = page.next;
    }
    return { version: version ?? 0, hosts };
  }

  async #apply(node: string, peer: Peer, hosts: StatePage['hosts']): Promise<void> {
    const { router, calls } = this.#deps;
    const seen = new Set<string>();
    for (const entry of hosts) {
      if (typeof entry?.host !== 'string' || !Array.isArray(entry.tools)) continue;
      seen.add(entry.host);
      const tools = JSON.stringify(entry.tools);
      const current = router.linkOf(entry.host);
      // A session of this node, or a newer one on a third node, wins over a stale announcement.
      if (current !== undefined && current.node !== node && (current.node === undefined || current.connectedAt.getTime() > entry.connectedAt)) continue;
      const known = peer.links.get(entry.host);
      if (known !== undefined && current === known.link) {
        if (known.tools === tools) continue;
        known.tools = tools;
        await router.advertise(known.link, entry.tools);
        continue;
      }
      const link = new RemoteHostLink(calls, node, entry.host, new Date(entry.connectedAt), entry.remote);
      peer.links.set(entry.host, { link, tools });
      router.bind(link);
      await router.advertise(link, entry.tools);
    }
    for (const [host, known] of peer.links) {
      if (seen.has(host)) continue;
      peer.links.delete(host);
      known.link.replace();
      router.unbind(known.link);
    }
  }

  /** Answer a `state` request: one page of this node's hosts. */
  #onState(data: Uint8Array, reply: string | undefined): void {
    if (reply === undefined) return;
    const offset = Math.max(0, Math.trunc(Number(decode<{ offset?: number }>(data)?.offset ?? 0)) || 0);
    // One snapshot per version: a peer pages through it, and every peer reads the same one.
    if (this.#snapshot?.version !== this.#version) this.#snapshot = { version: this.#version, hosts: this.#deps.router.localHosts() };
    const all = this.#snapshot.hosts;
    const hosts = all
      .slice(offset, offset + PAGE_HOSTS)
      .map((h) => ({ host: h.host, ...(h.remote !== undefined && { remote: h.remote }), connectedAt: h.connectedAt.getTime(), tools: h.tools }));
    const page: StatePage = { version: this.#version, boot: this.#deps.boot, hosts, ...(offset + PAGE_HOSTS < all.length && { next: offset + PAGE_HOSTS }) };
    this.#deps.bus.publish(reply, encode(page));
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
    this.#deps.calls.failNode(node, reason);
    this.#deps.logger.warn({ node, hosts: peer.links.size }, `cluster: ${reason}`);
  }
}
