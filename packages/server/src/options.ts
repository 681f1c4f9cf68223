/**
 * Server options and their defaults (DESIGN §8). Every limit is an option; `resolveOptions` fills
 * the rest from `Defaults` and throws a RangeError/TypeError at once on caller misuse.
 */
import { Defaults } from '@toolwire/protocol';
import { sequentialCallId } from './session/pending-calls.js';
import { pino, type Logger as PinoLogger } from 'pino';

/** The logging surface toolwire uses (a pino logger fits). */
export type Logger = Pick<PinoLogger, 'debug' | 'info' | 'warn' | 'error'>;

/** A host identity: connections presenting `token` are host `name` (`[A-Za-z0-9-]`, single `_` allowed, no `__`). */
export interface HostCredential {
  name: string;
  token: string;
}

/** A caller identity for the MCP door: `name` becomes the agent id; `grant` lists callable tool names (default `["*"]`). */
export interface CallerCredential {
  name: string;
  token: string;
  grant?: readonly string[];
}

/** How tool names from different hosts are exposed (DESIGN §2). */
export type Naming = 'qualified' | 'bare';

/** Options of `ToolwireServer`. All times in ms, sizes in bytes. */
export interface ServerOptions {
  /** Host tokens → host identities. Default: none (no host can connect unless `loopbackDev`). */
  hosts?: readonly HostCredential[];
  /** Caller tokens for the MCP door. Default: none. */
  callers?: readonly CallerCredential[];
  /** `qualified` (default): `<host>__<tool>`; `bare`: first host keeps a name, later duplicates rejected. */
  naming?: Naming;
  /** Largest frame accepted (ws `maxPayload`); default 16 MiB; over → close 1009. */
  maxPayload?: number;
  /** Ping interval; default 10000. A host missing one pong is terminated (dead within 2×). */
  heartbeatMs?: number;
  /** Default call deadline; default 120000. */
  deadlineMs?: number;
  /** How long a stopped call waits for partial output before settling 130; default 2000. */
  cancelGraceMs?: number;
  /** Tools per host; default 256. */
  maxToolsPerHost?: number;
  /** inputSchema JSON size; default 65536. */
  maxSchemaBytes?: number;
  /** inputSchema nesting depth; default 32. */
  maxSchemaDepth?: number;
  /** Calls in flight per host; default 256; over → 75. */
  maxInFlightPerHost?: number;
  /** Socket send-buffer bytes per host; default 8 MiB; over → 75. */
  maxBufferedBytesPerHost?: number;
  /** Time from upgrade to `hello`; default 10000; over → close 1008. */
  helloTimeoutMs?: number;
  /** Wrong-shape frames per session before close 1008; default 16. */
  maxBadFrames?: number;
  /**
   * Test seam: mints the wire id of each call sent to a host (`call.id`, 1–128 characters). Default
   * a random per-process prefix (12 nanoid characters) and a counter, unique per process. An id still pending on the same session is never
   * reused: the session draws again, and after 8 colliding or invalid draws settles the new call 70.
   */
  newCallId?: () => string;
  /** Disk record root (`<root>/<agent>/<call id>/{input,output}.json`); default: no record. */
  recordDir?: string;
  /** Projection head/tail bytes per stream; default 16384 each. */
  projectionHeadBytes?: number;
  projectionTailBytes?: number;
  /** Loopback dev mode: hosts connecting from 127.0.0.1/::1 without a token may name themselves in `hello`. Default false. */
  loopbackDev?: boolean;
  /** Longest tool description an advertise may carry, characters; default 4096; longer → that tool rejected. */
  maxDescriptionChars?: number;
  /** Open host WebSocket connections in total (including those before `hello`); default 1024; over → HTTP 503 at the upgrade. */
  maxConnections?: number;
  /** Open connections per host identity (token); default 4; over → HTTP 429 at the upgrade. Loopback dev hosts count only toward `maxConnections`. */
  maxConnectionsPerHost?: number;
  /**
   * Origins (`scheme://host[:port]`, compared exactly, case-insensitively) allowed to open a host
   * connection or call the MCP door from a browser. A request that carries an `Origin` header not in
   * this list gets HTTP 403; requests without `Origin` (tool hosts, CLI, SDK clients) are unaffected.
   * Default `[]`: browser-originated requests are refused.
   */
  allowedOrigins?: readonly string[];
  /** Negotiate permessage-deflate with hosts that offer it; default false. When on, `maxPayload` bounds the inflated size (→ 1009). */
  perMessageDeflate?: boolean;
  /** Failed authentications from one address within `authFailureWindowMs` before it is refused with 429; default 10. */
  authMaxFailures?: number;
  /** Window in which failed authentications are counted, ms; default 60000. */
  authFailureWindowMs?: number;
  /** First refusal period after `authMaxFailures`, ms; doubles with each further failure, up to max(authBlockMs, authFailureWindowMs); default 1000. */
  authBlockMs?: number;
  /** Addresses the failure limiter remembers at most (oldest forgotten first); default 10000. */
  authMaxTrackedAddresses?: number;
  /** Default: a silent pino logger. */
  logger?: Logger;
}

/** Defaults of the security limits that only the server has (the rest are protocol `Defaults`, DESIGN §8). */
export const SecurityDefaults = {
  maxConnections: 1024,
  maxConnectionsPerHost: 4,
  authMaxFailures: 10,
  authFailureWindowMs: 60_000,
  authBlockMs: 1_000,
  authMaxTrackedAddresses: 10_000,
} as const;

/** Options with every default filled in. */
export type ResolvedOptions = Required<Omit<ServerOptions, 'recordDir'>> & { recordDir: string | undefined };

const positive = [
  'maxPayload', 'heartbeatMs', 'deadlineMs', 'maxToolsPerHost', 'maxSchemaBytes', 'maxSchemaDepth',
  'maxInFlightPerHost', 'maxBufferedBytesPerHost', 'helloTimeoutMs', 'maxBadFrames', 'maxDescriptionChars',
  'maxConnections', 'maxConnectionsPerHost', 'authMaxFailures', 'authFailureWindowMs', 'authBlockMs', 'authMaxTrackedAddresses',
] as const;
const nonNegative = ['cancelGraceMs', 'projectionHeadBytes', 'projectionTailBytes'] as const;

/** Check `allowedOrigins` and lower-case it (origins compare case-insensitively). */
function normalizeOrigins(origins: readonly string[] | undefined): readonly string[] {
  if (origins === undefined) return Object.freeze([]);
  if (!Array.isArray(origins) || !origins.every((o): o is string => typeof o === 'string' && o.length > 0)) {
    throw new TypeError('ServerOptions.allowedOrigins must be an array of non-empty origin strings, e.g. ["https://app.example.com"]');
  }
  return Object.freeze(origins.map((o) => o.toLowerCase()));
}

/** Fill defaults and check ranges. Throws `RangeError` for a non-positive/non-integer limit, `TypeError` for a bad naming. */
export function resolveOptions(options: ServerOptions = {}): ResolvedOptions {
  const resolved: ResolvedOptions = {
    hosts: options.hosts ?? [],
    callers: options.callers ?? [],
    naming: options.naming ?? 'qualified',
    maxPayload: options.maxPayload ?? Defaults.maxPayload,
    heartbeatMs: options.heartbeatMs ?? Defaults.heartbeatMs,
    deadlineMs: options.deadlineMs ?? Defaults.deadlineMs,
    cancelGraceMs: options.cancelGraceMs ?? Defaults.cancelGraceMs,
    maxToolsPerHost: options.maxToolsPerHost ?? Defaults.maxToolsPerHost,
    maxSchemaBytes: options.maxSchemaBytes ?? Defaults.maxSchemaBytes,
    maxSchemaDepth: options.maxSchemaDepth ?? Defaults.maxSchemaDepth,
    maxInFlightPerHost: options.maxInFlightPerHost ?? Defaults.maxInFlightPerHost,
    maxBufferedBytesPerHost: options.maxBufferedBytesPerHost ?? Defaults.maxBufferedBytesPerHost,
    helloTimeoutMs: options.helloTimeoutMs ?? Defaults.helloTimeoutMs,
    maxBadFrames: options.maxBadFrames ?? Defaults.maxBadFrames,
    newCallId: options.newCallId ?? sequentialCallId,
    recordDir: options.recordDir,
    projectionHeadBytes: options.projectionHeadBytes ?? Defaults.projectionHeadBytes,
    projectionTailBytes: options.projectionTailBytes ?? Defaults.projectionTailBytes,
    loopbackDev: options.loopbackDev ?? false,
    maxDescriptionChars: options.maxDescriptionChars ?? Defaults.maxDescriptionChars,
    maxConnections: options.maxConnections ?? SecurityDefaults.maxConnections,
    maxConnectionsPerHost: options.maxConnectionsPerHost ?? SecurityDefaults.maxConnectionsPerHost,
    allowedOrigins: normalizeOrigins(options.allowedOrigins),
    perMessageDeflate: options.perMessageDeflate ?? false,
    authMaxFailures: options.authMaxFailures ?? SecurityDefaults.authMaxFailures,
    authFailureWindowMs: options.authFailureWindowMs ?? SecurityDefaults.authFailureWindowMs,
    authBlockMs: options.authBlockMs ?? SecurityDefaults.authBlockMs,
    authMaxTrackedAddresses: options.authMaxTrackedAddresses ?? SecurityDefaults.authMaxTrackedAddresses,
    logger: options.logger ?? pino({ level: 'silent' }),
  };
  for (const key of positive) {
    const v = resolved[key];
    if (!Number.isInteger(v) || v <= 0) throw new RangeError(`ServerOptions.${key} must be a positive integer, got ${v}`);
  }
  for (const key of nonNegative) {
    const v = resolved[key];
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`ServerOptions.${key} must be a non-negative integer, got ${v}`);
  }
  if (typeof resolved.newCallId !== 'function') throw new TypeError('ServerOptions.newCallId must be a function returning a string');
  if (typeof resolved.perMessageDeflate !== 'boolean') throw new TypeError('ServerOptions.perMessageDeflate must be a boolean');
  if (resolved.naming !== 'qualified' && resolved.naming !== 'bare') {
    throw new TypeError(`ServerOptions.naming must be "qualified" or "bare", got ${String(resolved.naming)}`);
  }
  return resolved;
}
