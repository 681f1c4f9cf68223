/**
 * Server options and their defaults (DESIGN §8). Every limit is an option; `resolveOptions` fills
 * the rest from `Defaults` and throws a RangeError/TypeError at once on caller misuse.
 */
import { Defaults } from '@toolwire/protocol';
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
  /** Disk record root (`<root>/<agent>/<call id>/{input,output}.json`); default: no record. */
  recordDir?: string;
  /** Projection head/tail bytes per stream; default 16384 each. */
  projectionHeadBytes?: number;
  projectionTailBytes?: number;
  /** Loopback dev mode: hosts connecting from 127.0.0.1/::1 without a token may name themselves in `hello`. Default false. */
  loopbackDev?: boolean;
  /** Default: a silent pino logger. */
  logger?: Logger;
}

/** Options with every default filled in. */
export type ResolvedOptions = Required<Omit<ServerOptions, 'recordDir'>> & { recordDir: string | undefined };

const positive = [
  'maxPayload', 'heartbeatMs', 'deadlineMs', 'maxToolsPerHost', 'maxSchemaBytes', 'maxSchemaDepth',
  'maxInFlightPerHost', 'maxBufferedBytesPerHost', 'helloTimeoutMs', 'maxBadFrames',
] as const;
const nonNegative = ['cancelGraceMs', 'projectionHeadBytes', 'projectionTailBytes'] as const;

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
    recordDir: options.recordDir,
    projectionHeadBytes: options.projectionHeadBytes ?? Defaults.projectionHeadBytes,
    projectionTailBytes: options.projectionTailBytes ?? Defaults.projectionTailBytes,
    loopbackDev: options.loopbackDev ?? false,
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
  if (resolved.naming !== 'qualified' && resolved.naming !== 'bare') {
    throw new TypeError(`ServerOptions.naming must be "qualified" or "bare", got ${String(resolved.naming)}`);
  }
  return resolved;
}
