/**
 * Slowing down failed authentication: once one address failed too often, its further failures are
 * answered HTTP 429 with `Retry-After` instead of 401 for a while (issue 10 §5). The token is always
 * checked first — a constant-time digest compare, cheap — and a valid one is accepted even while
 * its address is throttled, so a misconfigured host cannot lock out good callers on the same
 * machine. Only a failed check is counted. Bounded
 * and in memory: at most `maxTracked` addresses are remembered (the least recently failing one is
 * forgotten first), entries are dropped lazily once their window has passed, and no timer runs.
 *
 * Addresses are grouped the way a client controls them: an IPv4-mapped IPv6 address counts as its
 * IPv4 address, and an IPv6 address as its /64 prefix (one end site). Behind a reverse proxy every
 * peer has the proxy's address; `X-Forwarded-For` is not trusted.
 */
import { isIPv6 } from 'node:net';

/** Options of an {@link AuthLimiter}. Times in ms. */
export interface AuthLimiterOptions {
  /** Failures from one address within `windowMs` before it is blocked (ToolwireServerOptions.authMaxFailures, default 10). */
  maxFailures: number;
  /** Window in which failures are counted (ToolwireServerOptions.authFailureWindowMs, default 60000). */
  windowMs: number;
  /** First block; each further failure while over the limit doubles it, up to `max(blockMs, windowMs)` (ToolwireServerOptions.authBlockMs, default 1000). */
  blockMs: number;
  /** Addresses remembered at most (ToolwireServerOptions.authMaxTrackedAddresses, default 10000). */
  maxTracked: number;
  /** Clock, ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Outcome of {@link AuthLimiter.check}: whether the address may try to authenticate now. */
export type LimitVerdict = { blocked: false } | { blocked: true; retryAfterMs: number };

interface Entry {
  failures: number;
  windowStart: number;
  blockedUntil: number;
  blocks: number;
}

const OPEN: LimitVerdict = Object.freeze({ blocked: false });

/** Expand an IPv6 address (no zone id) into its 8 hextets. */
function hextets(address: string): string[] {
  const [head = '', tail] = address.split('::', 2) as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // An embedded IPv4 tail (`::1.2.3.4`) takes two hextets; its exact value does not matter for /64.
  const width = (parts: string[]): number => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const fill = tail === undefined ? [] : Array<string>(Math.max(0, 8 - width(left) - width(right))).fill('0');
  return [...left, ...fill, ...right];
}

/** The last address {@link addressKey} was asked about, and its key. */
let lastRemote: string | undefined;
let lastKey = '';

/**
 * The key failures are counted under: `1.2.3.4` for IPv4 and IPv4-mapped IPv6, the /64 prefix
 * (`2001:db8:0:1::/64`) for other IPv6, `unknown` when the socket has no address.
 */
export function addressKey(remote: string | undefined): string {
  if (remote === undefined || remote === '') return 'unknown';
  // A failed authentication asks for the same address twice (check, then fail), and a flood comes
  // from one address: the last answer is kept.
  if (remote === lastRemote) return lastKey;
  lastKey = computeKey(remote);
  lastRemote = remote;
  return lastKey;
}

function computeKey(remote: string): string {
  const address = remote.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const prefix = hextets(address)
    .slice(0, 4)
    .map((h) => h.replace(/^0+(?=.)/, ''));
  return `${prefix.join(':')}::/64`;
}

/** `Retry-After` in whole seconds (RFC 9110 §10.2.3), at least 1. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** The reason a throttled failure is given, in the 429's body: `too many failed authentications from this address; retry after N s`. */
export function tooManyFailures(retryAfterMs: number): string {
  return `too many failed authentications from this address; retry after ${retryAfterSeconds(retryAfterMs)} s`;
}

/** Counts authentication failures per address and blocks an address that fails too often. */
export class AuthLimiter {
  readonly #options: Required<AuthLimiterOptions>;
  readonly #entries = new Map<string, Entry>();
  /** The key most recently (re)inserted into `#entries`: while present, it is the last in Map order. */
  #newest: string | undefined;

  /** @throws RangeError when a limit is not a positive integer */
  constructor(options: AuthLimiterOptions) {
    this.#options = { now: Date.now, ...options };
    for (const key of ['maxFailures', 'windowMs', 'blockMs', 'maxTracked'] as const) {
      const v = this.#options[key];
      if (!Number.isInteger(v) || v <= 0) throw new RangeError(`AuthLimiter: ${key} must be a positive integer, got ${v}`);
    }
  }

  /** Addresses currently remembered (≤ `maxTracked`). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Is `remote` (a socket's `remoteAddress`) throttled now? Asked after a failed token check:
   * blocked → answer 429 with `Retry-After: ceil(retryAfterMs / 1000)` (and {@link tooManyFailures})
   * instead of 401.
   */
  check(remote: string | undefined): LimitVerdict {
    const key = addressKey(remote);
    const entry = this.#entries.get(key);
    if (entry === undefined) return OPEN;
    const now = this.#options.now();
    if (now < entry.blockedUntil) return { blocked: true, retryAfterMs: entry.blockedUntil - now };
    if (now - entry.windowStart > this.#options.windowMs) this.#entries.delete(key);
    return OPEN;
  }

  /** Failed authentications recorded since this limiter was made (for `/metrics`). */
  failures = 0;

  /** Record one failed authentication from `remote`. */
  fail(remote: string | undefined): void {
    this.#fail(addressKey(remote), this.#options.now());
  }

  /**
   * {@link check}, then {@link fail}, for one failed authentication from `remote`, with one lookup:
   * the verdict is the one {@link check} gives before this failure is counted.
   */
  checkAndFail(remote: string | undefined): LimitVerdict {
    const key = addressKey(remote);
    const now = this.#options.now();
    const entry = this.#entries.get(key);
    const verdict: LimitVerdict = entry !== undefined && now < entry.blockedUntil ? { blocked: true, retryAfterMs: entry.blockedUntil - now } : OPEN;
    this.#fail(key, now, entry);
    return verdict;
  }

  /** Count a failure under `key` (`entry`: its entry now, if any). */
  #fail(key: string, now: number, entry = this.#entries.get(key)): void {
    this.failures += 1;
    const { windowMs, maxFailures, blockMs, maxTracked } = this.#options;
    // Most recent last: re-inserted unless it is the last already, so a flood from one address
    // leaves the Map as it is instead of deleting and re-adding its entry on every failure.
    const inPlace = entry !== undefined && key === this.#newest;
    if (entry !== undefined && !inPlace) this.#entries.delete(key);
    if (entry === undefined) {
      entry = { failures: 0, windowStart: now, blockedUntil: 0, blocks: 0 };
    } else if (now - entry.windowStart > windowMs && now >= entry.blockedUntil) {
      entry.failures = 0;
      entry.windowStart = now;
      entry.blockedUntil = 0;
      entry.blocks = 0;
    }
    entry.failures += 1;
    if (entry.failures >= maxFailures) {
      const ms = Math.min(blockMs * 2 ** Math.min(entry.blocks, 30), Math.max(blockMs, windowMs));
      entry.blocks += 1;
      entry.blockedUntil = now + ms;
    }
    if (inPlace) return;
    this.#entries.set(key, entry);
    this.#newest = key;
    while (this.#entries.size > maxTracked) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
