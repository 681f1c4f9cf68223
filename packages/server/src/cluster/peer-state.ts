/**
 * The fetching side of `state` (DESIGN §10): reading another node's hosts (in pages, or the changes
 * since the version applied here) and applying them, each bound as a {@link RemoteHostLink} in this
 * node's router, which advertises the host's tools as for a local host. A host skipped because
 * another session of its identity won here is read again when that session leaves. Membership (who
 * the other nodes are, when to fetch) is `peers.ts`; the answering side is `state-pages.ts`.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import type { Bus } from './bus.js';
import type { Subjects } from './options.js';
import { type RemoteCalls, RemoteHostLink } from './remote-calls.js';
import { type StatePage, type StateRequest, decode, encode } from './wire.js';

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

/** What this node has read and bound of another node's hosts. */
export interface PeerHosts {
  /** The boot of that node these hosts are of (a page of another boot is not applied). */
  boot: string;
  /** The version announced last, and the one whose hosts are bound here (-1: none yet). */
  announced: number;
  applied: number;
  /** A fetch of its hosts is under way. */
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

/** What {@link PeerState} needs of the cluster node it runs in. */
export interface PeerStateDeps {
  bus: Bus;
  subjects: Subjects;
  router: Router;
  calls: RemoteCalls;
  /** Bound on each `state` request, ms. */
  requestTimeoutMs: number;
  logger: Logger;
  /** The other nodes currently known, by node id (owned by membership; a node not in it is no longer applied). */
  peers: ReadonlyMap<string, PeerHosts>;
  /** This node is shutting down: no fetch starts or goes on. */
  closed: () => boolean;
  /** A fetch of a node's hosts ended (applied or failed). */
  tried: () => void;
}

/** Fetches other nodes' hosts and applies them to this node's router. */
export class PeerState {
  readonly #deps: PeerStateDeps;

  constructor(deps: PeerStateDeps) {
    this.#deps = deps;
  }

  /**
   * Fetch `node`'s hosts (all pages) and apply them; again while its version moved (or a refetch
   * was asked) meanwhile. At most one runs per node; a failure is logged and retried on its next
   * heartbeat. Never rejects.
   */
  async sync(node: string, peer: PeerHosts): Promise<void> {
    if (peer.syncing) return;
    peer.syncing = true;
    let full = false;
    try {
      while (!this.#deps.closed() && this.#deps.peers.get(node) === peer && (peer.applied !== peer.announced || peer.refetch)) {
        full = peer.refetch;
        peer.refetch = false;
        const state = await this.#fetch(node, peer, full);
        if (state === undefined || this.#deps.peers.get(node) !== peer) return;
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
      this.#deps.tried();
    }
  }

  /**
   * `host`'s session bound here left (closed, or evicted when another node took its identity): a
   * node whose session of `host` was skipped while this one stayed is read again, so its session
   * is bound here now and not when that node next changes.
   */
  uncovered(host: string): void {
    if (this.#deps.closed() || this.#deps.router.linkOf(host) !== undefined) return;
    for (const [node, peer] of this.#deps.peers) {
      if (!peer.shadowed.has(host)) continue;
      peer.refetch = true;
      void this.sync(node, peer);
    }
  }

  /**
   * Every host of `peer` (a node no longer known) leaves this node's router; a session of another
   * node skipped for one of them is read again. `peer.links` is left as it was. `why` (e.g. the node
   * was lost) is the reason a call to their departed tools answers 69 with.
   */
  release(peer: PeerHosts, why?: string): void {
    for (const { link } of peer.links.values()) {
      link.replace();
      this.#deps.router.unbind(link, why);
    }
    for (const host of peer.links.keys()) this.uncovered(host);
  }

  /**
   * `node`'s hosts: the changes since the version applied here (`gone` set) when its node answers
   * them in one page and `full` is not set, else every page, all of one version (again from the
   * start when it was dropped meanwhile).
   */
  async #fetch(node: string, peer: PeerHosts, full: boolean, tries = 3): Promise<{ version: number; hosts: FetchedHost[]; gone?: string[] } | undefined> {
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
  async #apply(node: string, peer: PeerHosts, hosts: FetchedHost[]): Promise<void> {
    const seen = new Set<string>();
    let done = 0;
    peer.shadowed.clear(); // every host is judged again
    for (const entry of hosts) {
      if (++done % APPLY_PER_TURN === 0) await nextTurn();
      if (this.#deps.peers.get(node) !== peer) return;
      seen.add(entry.host);
      await this.#applyHost(node, peer, entry);
    }
    for (const host of [...peer.links.keys()]) if (!seen.has(host)) this.#unbind(peer, host);
  }

  /** The hosts of `node` changed since the version applied here: `hosts` as they are now, `gone` left. */
  async #applyChanges(node: string, peer: PeerHosts, hosts: FetchedHost[], gone: string[]): Promise<void> {
    let done = 0;
    for (const host of gone) {
      peer.shadowed.delete(host);
      this.#unbind(peer, host);
    }
    for (const entry of hosts) {
      if (++done % APPLY_PER_TURN === 0) await nextTurn();
      if (this.#deps.peers.get(node) !== peer) return;
      await this.#applyHost(node, peer, entry);
    }
  }

  async #applyHost(node: string, peer: PeerHosts, entry: FetchedHost): Promise<void> {
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
  #unbind(peer: PeerHosts, host: string): void {
    const known = peer.links.get(host);
    if (known === undefined) return;
    peer.links.delete(host);
    known.link.replace();
    this.#deps.router.unbind(known.link);
    this.uncovered(host);
  }
}
