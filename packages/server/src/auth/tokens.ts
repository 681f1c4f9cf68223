/**
 * Bearer tokens → identities (DESIGN §5: authentication happens at the HTTP upgrade, the token maps
 * to the identity on the server; tokens are compared in constant time).
 *
 * Tokens are never stored: only their SHA-256 digests are kept, in a map keyed by the digest. A
 * presented token is hashed, its digest looked up (O(1) in the number of identities), and the
 * digest found — or a fixed dummy when none is — compared with the presented one by
 * `crypto.timingSafeEqual`: exactly one constant-time compare per authentication, hit or miss. The
 * lookup itself works on the SHA-256 of the token, not on the token: what its timing could tell
 * (how many leading digest bytes of some entry match) gives an attacker nothing to build a token
 * from, so it reveals neither which tokens exist nor how close a guess came.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { NAME_PATTERN, QUALIFIER } from '@toolwire/protocol';
import type { CallerCredential, HostCredential } from '../options.js';

/** Who a token speaks for: a tool host (WebSocket endpoint) or a caller (MCP door). */
export type PrincipalRole = 'host' | 'caller';

/**
 * An authenticated identity.
 * - `role: 'host'` — `name` is the host identity (the `<host>` of qualified tool names).
 * - `role: 'caller'` — `name` is the agent id; `grant` lists callable tool names (default `["*"]`).
 */
export interface Principal {
  role: PrincipalRole;
  name: string;
  grant?: readonly string[];
}

interface Entry {
  digest: Buffer;
  principal: Principal;
}

/** Bytes of a SHA-256 digest. */
const DIGEST_BYTES = 32;

/** Compared against on a miss, so a miss costs the same constant-time compare as a hit. */
const NO_DIGEST = Buffer.alloc(DIGEST_BYTES);

/** The presented token's digest, written here for the compare ({@link TokenTable.authenticate}). */
const PRESENTED = Buffer.alloc(DIGEST_BYTES);

/** Default grant of a caller credential without one (ToolwireServerOptions.callers). */
const DEFAULT_GRANT: readonly string[] = Object.freeze(['*']);

/** `Authorization: Bearer <token>` (scheme case-insensitive, RFC 7235 §2.1 / RFC 6750 §2.1). */
const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** SHA-256 of the token's UTF-8 bytes (one-shot `crypto.hash`: no `Hash` object per authentication). */
function digestOf(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

/** The map key of a digest (its bytes as a Latin-1 string: one character per byte). */
function keyOf(digest: Buffer): string {
  return digest.toString('latin1');
}

/** A SHA-256 digest in hex, as `tokenDigest` gives it. */
const DIGEST_HEX = /^[0-9a-f]{64}$/;

/** The digest of a credential's secret: `token` hashed, or `tokenDigest` as given (exactly one of the two). */
function secretDigest(cred: { token?: unknown; tokenDigest?: unknown }, where: string): Buffer {
  if (cred.tokenDigest !== undefined) {
    if (cred.token !== undefined) throw new TypeError(`${where} must give token or tokenDigest, not both`);
    if (typeof cred.tokenDigest !== 'string' || !DIGEST_HEX.test(cred.tokenDigest)) {
      throw new TypeError(`${where}.tokenDigest must be a SHA-256 digest in lowercase hex (64 digits)`);
    }
    return Buffer.from(cred.tokenDigest, 'hex');
  }
  const token = cred.token;
  if (typeof token !== 'string' || token.length === 0) throw new TypeError(`${where}.token must be a non-empty string`);
  if (/\s/.test(token)) throw new TypeError(`${where}.token must not contain whitespace (it travels as "Bearer <token>")`);
  return digestOf(token);
}

function checkName(name: unknown, where: string, isHost: boolean): string {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new TypeError(`${where}.name must match ${NAME_PATTERN.source}, got ${JSON.stringify(name)}`);
  }
  if (isHost && name.includes(QUALIFIER)) {
    throw new TypeError(`${where}.name must not contain "${QUALIFIER}" (it separates <host>${QUALIFIER}<tool>), got "${name}"`);
  }
  return name;
}

function checkGrant(grant: unknown, where: string): readonly string[] {
  if (grant === undefined) return DEFAULT_GRANT;
  if (!Array.isArray(grant) || !grant.every((g) => typeof g === 'string' && g.length > 0)) {
    throw new TypeError(`${where}.grant must be an array of non-empty strings`);
  }
  return Object.freeze([...(grant as string[])]);
}

/** Same role, name and grant (order included). */
function samePrincipal(a: Principal, b: Principal): boolean {
  if (a.role !== b.role || a.name !== b.name) return false;
  const ga = a.grant ?? [];
  const gb = b.grant ?? [];
  return ga.length === gb.length && ga.every((g, i) => g === gb[i]);
}

/** Entries by {@link keyOf} their digest, and the configured host names. */
interface Entries {
  byDigest: Map<string, Entry>;
  hostNames: Set<string>;
}

/** Build and check a full table; throws TypeError on the first bad credential. */
function buildEntries(hosts: readonly HostCredential[], callers: readonly CallerCredential[]): Entries {
  if (!Array.isArray(hosts)) throw new TypeError('hosts must be an array of {name, token}');
  if (!Array.isArray(callers)) throw new TypeError('callers must be an array of {name, token, grant?}');
  const byDigest = new Map<string, Entry>();
  const names = { host: new Set<string>(), caller: new Set<string>() };
  const add = (role: PrincipalRole, cred: HostCredential | CallerCredential, i: number): void => {
    const where = `${role === 'host' ? 'hosts' : 'callers'}[${i}]`;
    if (typeof cred !== 'object' || cred === null) throw new TypeError(`${where} must be an object`);
    const name = checkName(cred.name, where, role === 'host');
    const digest = secretDigest(cred, where);
    if (names[role].has(name)) throw new TypeError(`${where}.name "${name}" is given twice`);
    names[role].add(name);
    const key = keyOf(digest);
    if (byDigest.has(key)) throw new TypeError(`${where}.token is already used by another credential`);
    const principal: Principal = role === 'host' ? { role, name } : { role, name, grant: checkGrant((cred as CallerCredential).grant, where) };
    byDigest.set(key, { digest, principal: Object.freeze(principal) });
  };
  hosts.forEach((cred: HostCredential, i) => add('host', cred, i));
  callers.forEach((cred: CallerCredential, i) => add('caller', cred, i));
  return { byDigest, hostNames: names.host };
}

/**
 * The server's token table: host tokens (ToolwireServerOptions.hosts) and caller tokens (ToolwireServerOptions.callers).
 *
 * Rules (TypeError at construction or `update` on a violation):
 * - host names match `[A-Za-z0-9_-]{1,64}` and contain no `__` (DESIGN §2: qualified names
 *   `<host>__<tool>`); caller names match `[A-Za-z0-9_-]{1,64}`;
 * - a name appears once per role; a token appears once in the whole table (one token, one identity);
 * - tokens are non-empty and contain no whitespace; a `tokenDigest` is 64 lowercase hex digits.
 *
 * It also remembers when each identity last authenticated (in memory, {@link lastSeen}).
 * {@link authenticate}, {@link isCurrent} and {@link hasHost} take the same time whatever the number
 * of identities.
 */
export class TokenTable {
  #entries: Entries;
  /** The principals of the current entries ({@link isCurrent}). */
  #current = new WeakSet<Principal>();
  /** `"<role>:<name>"` → time (ms since the epoch) of its last successful {@link authenticate}. */
  readonly #seen = new Map<string, number>();

  /** @throws TypeError on a bad or duplicate name, an empty/whitespace token, or a token used twice. */
  constructor(hosts: readonly HostCredential[], callers: readonly CallerCredential[]) {
    this.#entries = buildEntries(hosts, callers);
    for (const entry of this.#entries.byDigest.values()) this.#current.add(entry.principal);
  }

  /**
   * Identify the bearer of an `Authorization` header value.
   *
   * @param authorization the raw header, `Bearer <token>`; `undefined` when absent
   * @param role the role the endpoint accepts; a valid token of the other role is refused
   * @returns the principal, or `undefined` (→ HTTP 401) for a missing/malformed header, an unknown
   *   token, or a token of the wrong role
   */
  authenticate(authorization: string | undefined, role: PrincipalRole): Principal | undefined {
    if (typeof authorization !== 'string') return undefined;
    const match = BEARER.exec(authorization);
    if (!match) return undefined;
    // The digest as its map key straight from the hash (no Buffer per authentication), then copied
    // into a scratch Buffer for the compare: authenticate is synchronous, so one Buffer serves all.
    const key = hash('sha256', match[1]!, 'binary'); // 'binary' is Latin-1: {@link keyOf}'s key
    const entry = this.#entries.byDigest.get(key);
    PRESENTED.write(key, 0, DIGEST_BYTES, 'latin1');
    // One constant-time compare, hit or miss (a miss against a dummy digest).
    const equal = timingSafeEqual(entry?.digest ?? NO_DIGEST, PRESENTED);
    const found = equal ? entry?.principal : undefined;
    if (found === undefined || found.role !== role) return undefined;
    this.#seen.set(`${found.role}:${found.name}`, Date.now());
    return found;
  }

  /**
   * When each identity last authenticated through this table, keyed `"<role>:<name>"` (e.g.
   * `"host:laptop"`), in ms since the epoch; identities never seen since start are absent. In memory
   * only; a copy.
   */
  lastSeen(): Map<string, number> {
    return new Map(this.#seen);
  }

  /**
   * Replace both credential sets at once (token rotation). The new sets are checked fully before
   * anything changes; on a TypeError the old table stays in force. A credential that is unchanged
   * (same token, role, name and grant) keeps its `Principal` object, so {@link isCurrent} stays true
   * for it; every other principal handed out before becomes stale. The table does not close
   * sessions itself: `ToolwireServer.updateCredentials` does, using {@link isCurrent}.
   */
  update(hosts: readonly HostCredential[], callers: readonly CallerCredential[]): void {
    const next = buildEntries(hosts, callers);
    const current = new WeakSet<Principal>();
    for (const [key, entry] of next.byDigest) {
      const same = this.#entries.byDigest.get(key)?.principal;
      if (same !== undefined && samePrincipal(same, entry.principal)) entry.principal = same;
      current.add(entry.principal);
    }
    this.#entries = next;
    this.#current = current;
  }

  /**
   * True while `principal` (from {@link authenticate}) still stands for a configured token: false
   * once an {@link update} removed or changed its credential.
   */
  isCurrent(principal: Principal): boolean {
    return this.#current.has(principal);
  }

  /** True when `name` is a configured host identity (loopback dev mode may not claim one). */
  hasHost(name: string): boolean {
    return this.#entries.hostNames.has(name);
  }
}
