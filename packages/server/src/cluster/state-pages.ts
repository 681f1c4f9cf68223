/**
 * The answering side of `state` (DESIGN §10): this node's hosts as pages another node fetches. One
 * snapshot per version of the local host set, cut into pages of up to {@link PAGE_HOSTS} hosts and
 * at most the NATS message limit; each distinct tool set of a page travels once (the hosts of a
 * fleet mostly advertise the same tools, and the registry shares equal specs: `intern.ts`). The
 * last few snapshots are kept, so a peer paging through a version that has just moved on can finish
 * it instead of starting over.
 */
import type { ToolSpec } from '@toolwire/protocol';
import type { LocalHost } from '../router/router.js';
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

/** Snapshots of this node's hosts and the pages cut from them. */
export class StatePages {
  readonly #snapshots = new Map<number, Snapshot>();
  readonly #localHosts: () => LocalHost[];
  readonly #boot: string;

  constructor(localHosts: () => LocalHost[], boot: string) {
    this.#localHosts = localHosts;
    this.#boot = boot;
  }

  /**
   * The JSON of the page `request` asks for (a `StatePage`), at most `maxBytes` unless one host's
   * entry alone is larger. `version` is the current version of the local host set; a request for
   * a version no longer kept gets a page of the current one (the peer starts over).
   */
  page(version: number, request: StateRequest, maxBytes: number): string {
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

  #snapshot(version: number): Snapshot {
    const known = this.#snapshots.get(version);
    if (known !== undefined) return known;
    const hosts = this.#localHosts();
    const keys = new Map<string, number>();
    const setOf: number[] = [];
    const texts: string[] = [];
    for (const h of hosts) {
      const key = h.tools.map(idOf).join(',');
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
