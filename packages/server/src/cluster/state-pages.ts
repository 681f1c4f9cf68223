/**
 * The answering side of `state` (DESIGN §10): this node's hosts as pages another node fetches. One
 * snapshot per version of the local host set, cut into pages of up to {@link PAGE_HOSTS} hosts and
 * at most the NATS message limit; each distinct tool set of a page travels once (the hosts of a
 * fleet mostly advertise the same tools, and the registry shares equal specs: `intern.ts`). The
 * last few snapshots are kept, so a peer paging through a version that has just moved on can finish
 * it instead of starting over. A peer that applied an earlier version of the same boot asks for the
 * changes since it (`since`): the hosts that bound, re-advertised or left after that version, in one
 * page when they fit, instead of every host again on every change of a connect storm. Such a page
 * is read from the hosts as they are (the current version), host by host: no snapshot of every
 * host is made for it, so a connect storm, a new version per turn, allocates per changed host only.
 */
import type { ToolSpec } from '@toolwire/protocol';
import type { LocalHost } from '../router/listing.js';
import type { StateRequest } from './wire.js';

/** Hosts per `state` page at most. */
export const PAGE_HOSTS = 2000;
/** Snapshots (versions) kept for peers still paging through them. */
const KEPT_SNAPSHOTS = 4;

interface Snapshot {
  hosts: LocalHost[];
  /** Per host: the index of its tool set in `texts`. */
  setOf: number[];
  /** JSON text of each distinct tool set. */
  texts: string[];
}

/** A number per distinct spec object (specs are shared across hosts and never mutated). */
const specIds = new WeakMap<ToolSpec, number>();
let nextSpecId = 0;
const idOf = (spec: ToolSpec): number => {
  let id = specIds.get(spec);
  if (id === undefined) specIds.set(spec, (id = nextSpecId++));
  return id;
};
/** What tells equal tool sets apart: their specs' numbers. */
const setKey = (tools: readonly ToolSpec[]): string => tools.map(idOf).join(',');

/** Snapshots of this node's hosts and the pages cut from them. */
export class StatePages {
  readonly #snapshots = new Map<number, Snapshot>();
  /** Each host identity that changed since boot → the version of its last change (bounded by the identities configured). */
  readonly #changes = new Map<string, number>();
  readonly #localHosts: () => LocalHost[];
  readonly #localHost: (host: string) => LocalHost | undefined;
  readonly #boot: string;

  /**
   * @param localHosts every host bound on this node, as it is now
   * @param localHost one host bound on this node as it is now, `undefined` when none is
   */
  constructor(localHosts: () => LocalHost[], localHost: (host: string) => LocalHost | undefined, boot: string) {
    this.#localHosts = localHosts;
    this.#localHost = localHost;
    this.#boot = boot;
  }

  /**
   * The JSON of the page `request` asks for (a `StatePage`), at most `maxBytes` unless one host's
   * entry alone is larger. `version` is the current version of the local host set; a request for
   * a version no longer kept gets a page of the current one (the peer starts over).
   */
  page(version: number, request: StateRequest, maxBytes: number): string {
    if (request.since !== undefined && request.since <= version) {
      const delta = this.#delta(version, request.since, maxBytes);
      if (delta !== undefined) return delta;
    }
    const wanted = request.version !== undefined && this.#snapshots.has(request.version) ? request.version : version;
    const snapshot = this.#snapshot(wanted);
    const offset = wanted === request.version ? request.offset : 0;
    const sets = new Map<number, number>();
    const setTexts: string[] = [];
    const hosts: string[] = [];
    let bytes = 128 + this.#boot.length;
    let at = offset;
    for (; at < snapshot.hosts.length && hosts.length < PAGE_HOSTS; at++) {
      const h = snapshot.hosts[at]!;
      const set = snapshot.setOf[at]!;
      let index = sets.get(set);
      const newSet = index === undefined;
      index ??= sets.size;
      const entry = JSON.stringify({ host: h.host, ...(h.remote !== undefined && { remote: h.remote }), connectedAt: h.connectedAt.getTime(), set: index });
      const more = entry.length + 1 + (newSet ? snapshot.texts[set]!.length + 1 : 0);
      if (hosts.length > 0 && bytes + more > maxBytes) break;
      bytes += more;
      if (newSet) {
        sets.set(set, index);
        setTexts.push(snapshot.texts[set]!);
      }
      hosts.push(entry);
    }
    const next = at < snapshot.hosts.length ? `,"next":${at}` : '';
    return `{"version":${wanted},"boot":${JSON.stringify(this.#boot)},"sets":[${setTexts.join(',')}],"hosts":[${hosts.join(',')}]${next}}`;
  }

  /** `host`'s bound session, advertised set or departure is version `version` of the local host set. */
  note(host: string, version: number): void {
    this.#changes.set(host, version);
  }

  /**
   * The hosts changed after version `since` as they are at `version`, the current one (`gone`:
   * those no longer here), as one page with `delta` set; `undefined` when they do not fit one page.
   */
  #delta(version: number, since: number, maxBytes: number): string | undefined {
    const sets = new Map<string, number>();
    const setTexts: string[] = [];
    const hosts: string[] = [];
    const gone: string[] = [];
    let bytes = 128 + this.#boot.length;
    for (const [host, changedAt] of this.#changes) {
      if (changedAt <= since) continue;
      if (hosts.length + gone.length >= PAGE_HOSTS) return undefined;
      const h = this.#localHost(host);
      if (h === undefined) {
        const entry = JSON.stringify(host);
        bytes += entry.length + 1;
        gone.push(entry);
      } else {
        const key = setKey(h.tools);
        let i = sets.get(key);
        if (i === undefined) {
          const text = JSON.stringify(h.tools);
          sets.set(key, (i = sets.size));
          setTexts.push(text);
          bytes += text.length + 1;
        }
        const entry = JSON.stringify({ host: h.host, ...(h.remote !== undefined && { remote: h.remote }), connectedAt: h.connectedAt.getTime(), set: i });
        bytes += entry.length + 1;
        hosts.push(entry);
      }
      if (bytes > maxBytes) return undefined;
    }
    return `{"version":${version},"boot":${JSON.stringify(this.#boot)},"since":${since},"sets":[${setTexts.join(',')}],"hosts":[${hosts.join(',')}],"gone":[${gone.join(',')}]}`;
  }

  #snapshot(version: number): Snapshot {
    const known = this.#snapshots.get(version);
    if (known !== undefined) return known;
    const hosts = this.#localHosts();
    const keys = new Map<string, number>();
    const setOf: number[] = [];
    const texts: string[] = [];
    for (const h of hosts) {
      const key = setKey(h.tools);
      let set = keys.get(key);
      if (set === undefined) {
        keys.set(key, (set = texts.length));
        texts.push(JSON.stringify(h.tools));
      }
      setOf.push(set);
    }
    const snapshot = { hosts, setOf, texts };
    this.#snapshots.set(version, snapshot);
    for (const old of this.#snapshots.keys()) {
      if (this.#snapshots.size <= KEPT_SNAPSHOTS) break;
      this.#snapshots.delete(old);
    }
    return snapshot;
  }
}
