/**
 * Resolving the server options (DESIGN §8): `resolveServerConfig` applies {@link ServerDefaults}
 * once (one spread), checks every value (a RangeError/TypeError at once on caller misuse) and cuts
 * the result into the small options slice each component reads.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { type ClusterConfig, resolveClusterConfig } from './cluster/options.js';
import { ServerDefaults } from './defaults.js';
import type { AuthLimiterOptions } from './auth/limiter.js';
import type { EndpointOptions } from './endpoint/host-endpoint.js';
import { normalizeAllowedHosts } from './endpoint/http-front.js';
import type { ExecutorOptions, Fallback } from './executor/request.js';
import type { ToolControl } from './executor/gates.js';
import type { McpDoorOptions } from './mcp/door-options.js';
import { SessionCounters } from './observe/counters.js';
import type { CallerCredential, HostCredential, Logger, ServerTls, ToolwireServerOptions } from './options.js';
import { type Descriptors, type HttpOptions, preAuthSlices, sizedDefaults } from './preauth/config.js';
import { type OpenFilesLimit, readOpenFilesLimit } from './preauth/fd-limit.js';
import type { PreAuthOptions } from './preauth/guard.js';
import { AdvertiseCache } from './registry/advertise-cache.js';
import { SchemaCompiler } from './registry/schema-compiler.js';
import type { RouterOptions } from './router/router.js';
import { FrameDecoder } from './session/frame-decoder.js';
import type { SessionOptions } from './session/host-session.js';
import { captureCapBytes } from './session/output-stream.js';
import { sequentialCallId } from './session/call-id.js';
import type { StatusOptions } from './status/status-http.js';
import { sharedWorkers } from './worker/shared.js';

/**
 * Test seams of the server: not options a user sets, so not in {@link ToolwireServerOptions}.
 * Passed as `ToolwireServer`'s second (internal) constructor argument.
 * @internal
 */
export interface ServerSeams {
  /**
   * Mints the wire id of each call sent to a host (`call.id`, 1–128 characters). Default a random
   * per-process prefix (12 nanoid characters) and a counter, unique per process. An id still pending
   * on the same session is never reused: the session draws again, and after 8 colliding or invalid
   * draws settles the new call 70.
   */
  newCallId?: () => string;
  /** The process's open-files limit, read once per server. Default {@link readOpenFilesLimit} (`/proc/self/limits`). */
  openFilesLimit?: () => OpenFilesLimit;
  /** How long an offload worker stays without a job before it ends, ms; default `WORKER_IDLE_MS` (worker/shared.ts). */
  workerIdleMs?: number;
}

/**
 * {@link ToolwireServerOptions} resolved and cut into what each component reads: the composition
 * root (`ToolwireServer`) hands each component its own slice.
 * @internal
 */
export interface ServerConfig {
  logger: Logger;
  /** Keep metrics and serve `/metrics` (`ToolwireServerOptions.metrics`). */
  metrics: boolean;
  /** Counts of host-session events (also in `endpoint.session`). */
  counters: SessionCounters;
  /** Credentials for the token table. */
  hosts: readonly HostCredential[];
  callers: readonly CallerCredential[];
  tls: ServerTls | undefined;
  /** `close()` waits this long (plus a margin) for stopped calls to settle, ms. */
  cancelGraceMs: number;
  toolControl: ToolControl | undefined;
  fallback: Fallback | undefined;
  limiter: AuthLimiterOptions;
  preAuth: PreAuthOptions;
  http: HttpOptions;
  descriptors: Descriptors;
  /** `allowedHosts` checked and normalized; `undefined` when not given. */
  allowedHosts: readonly string[] | undefined;
  router: RouterOptions;
  endpoint: EndpointOptions;
  executor: ExecutorOptions;
  mcp: McpDoorOptions;
  status: StatusOptions & { recentCalls: number };
  cluster: ClusterConfig | undefined;
}

const positive = [
  'maxPayload',
  'heartbeatMs',
  'deadlineMs',
  'maxToolsPerHost',
  'maxSchemaBytes',
  'maxSchemaDepth',
  'maxInFlightPerHost',
  'maxBufferedBytesPerHost',
  'helloTimeoutMs',
  'maxBadFrames',
  'maxDescriptionChars',
  'maxConnections',
  'maxConnectionsPerHost',
  'authMaxFailures',
  'authFailureWindowMs',
  'authBlockMs',
  'authMaxTrackedAddresses',
  'mcpMaxSessions',
  'mcpMaxSessionsPerCaller',
  'mcpMaxListensPerCaller',
  'mcpMaxInputDepth',
  'mcpSessionIdleMs',
  'mcpMaxRequestBodyBytes',
  'maxPreAuthConnections',
  'maxPreAuthPerAddress',
  'preAuthTimeoutMs',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'keepAliveTimeoutMs',
  'maxHeaderBytes',
  'maxHeadersCount',
  'progressIntervalMs',
  'outputWindowBytes',
  'outputChunkBytes',
  'maxRecordLogBytes',
  'schemaCompileBudgetMs',
  'schemaCompileWindowMs',
  'maxSchemaCodeBytes',
  'frameDecodeTimeoutMs',
  'maxLogLinesPerHost',
  'logWindowMs',
  'statusRecentCalls',
  'statusMaxViewers',
  'statusSessionMs',
  'statusMaxSessions',
] as const;
const nonNegative = ['advertiseCacheBytes', 'cancelGraceMs', 'projectionHeadBytes', 'projectionTailBytes', 'maxCaptureBytes'] as const;

/** Check `allowedOrigins` and lower-case it (origins compare case-insensitively). */
function normalizeOrigins(origins: readonly string[]): readonly string[] {
  if (!Array.isArray(origins) || !origins.every((o): o is string => typeof o === 'string' && o.length > 0)) {
    throw new TypeError('ToolwireServerOptions.allowedOrigins must be an array of non-empty origin strings, e.g. ["https://app.example.com"]');
  }
  return Object.freeze(origins.map((o) => o.toLowerCase()));
}

/** `options` without the keys whose value is `undefined` (so they take the default in the spread). */
function defined<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Fill defaults and check every option, then cut the result into per-component slices.
 * Reads the open-files limit (`seams.openFilesLimit`) to size the connection defaults.
 * @throws RangeError for a limit that is not a positive (or non-negative) integer, or
 *   `headersTimeoutMs` above `requestTimeoutMs`; TypeError for a
 *   bad `naming`, `allowedOrigins`, `allowedHosts`, `perMessageDeflate`, `loopbackDev`, `tls` or `newCallId`
 * @internal
 */
export function resolveServerConfig(options: ToolwireServerOptions = {}, seams: ServerSeams = {}): ServerConfig {
  if (typeof options !== 'object' || options === null) throw new TypeError('ToolwireServer needs an options object');
  const given = defined(options);
  const openFiles = (seams.openFilesLimit ?? readOpenFilesLimit)();
  const sized = sizedDefaults(openFiles, given);
  const o = { ...ServerDefaults, ...sized.defaults, ...given };
  for (const key of positive) {
    const v = o[key];
    if (!Number.isInteger(v) || v <= 0) throw new RangeError(`ToolwireServerOptions.${key} must be a positive integer, got ${v}`);
  }
  for (const key of nonNegative) {
    const v = o[key];
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`ToolwireServerOptions.${key} must be a non-negative integer, got ${v}`);
  }
  for (const key of ['perMessageDeflate', 'loopbackDev'] as const) {
    if (typeof o[key] !== 'boolean') throw new TypeError(`ToolwireServerOptions.${key} must be a boolean`);
  }
  if (o.outputChunkBytes > o.outputWindowBytes) {
    throw new RangeError(`ToolwireServerOptions.outputChunkBytes (${o.outputChunkBytes}) must not exceed outputWindowBytes (${o.outputWindowBytes})`);
  }
  if (o.naming !== 'qualified' && o.naming !== 'bare') {
    throw new TypeError(`ToolwireServerOptions.naming must be "qualified" or "bare", got ${String(o.naming)}`);
  }
  const { tls } = options;
  if (tls !== undefined && (typeof tls !== 'object' || tls === null || !tls.cert || !tls.key)) {
    throw new TypeError('ToolwireServerOptions.tls needs cert and key (PEM)');
  }
  const newCallId = seams.newCallId ?? sequentialCallId;
  if (typeof newCallId !== 'function') throw new TypeError('newCallId must be a function returning a string');
  const logger = o.logger ?? pino({ level: 'silent' });
  const allowedOrigins = normalizeOrigins(o.allowedOrigins);
  const allowedHosts = o.allowedHosts === undefined ? undefined : normalizeAllowedHosts(o.allowedHosts);
  // Shared by the servers of this process; threads start at the first job only.
  const { decode: decodeWorker, compile: compileWorker } = sharedWorkers(seams.workerIdleMs);
  const toolLimits = { maxSchemaBytes: o.maxSchemaBytes, maxSchemaDepth: o.maxSchemaDepth, maxDescriptionChars: o.maxDescriptionChars };
  if (o.metrics !== undefined && typeof o.metrics !== 'boolean') throw new TypeError('ToolwireServerOptions.metrics must be a boolean');
  const counters = new SessionCounters();
  const session: SessionOptions = {
    heartbeatMs: o.heartbeatMs,
    helloTimeoutMs: o.helloTimeoutMs,
    cancelGraceMs: o.cancelGraceMs,
    deadlineMs: o.deadlineMs,
    maxPayload: o.maxPayload,
    maxToolsPerHost: o.maxToolsPerHost,
    maxInFlightPerHost: o.maxInFlightPerHost,
    maxBufferedBytesPerHost: o.maxBufferedBytesPerHost,
    maxBadFrames: o.maxBadFrames,
    output: {
      windowBytes: o.outputWindowBytes,
      maxChunkBytes: o.outputChunkBytes,
      capBytes: captureCapBytes(o.maxPayload, o.maxCaptureBytes),
    },
    maxLogLinesPerHost: o.maxLogLinesPerHost,
    logWindowMs: o.logWindowMs,
    newCallId,
    counters,
    decoder: new FrameDecoder(
      {
        limits: { ...toolLimits, maxToolsPerHost: o.maxToolsPerHost },
        decodeTimeoutMs: o.frameDecodeTimeoutMs,
        ...(o.advertiseCacheBytes > 0 && { advertises: new AdvertiseCache(o.advertiseCacheBytes) }),
      },
      decodeWorker,
    ),
    logger,
  };
  return {
    cluster: o.cluster === undefined ? undefined : resolveClusterConfig(o.cluster, () => `node-${randomBytes(6).toString('hex')}`),
    logger,
    metrics: o.metrics ?? true,
    counters,
    hosts: o.hosts ?? [],
    callers: o.callers ?? [],
    tls,
    cancelGraceMs: o.cancelGraceMs,
    toolControl: o.toolControl,
    fallback: o.fallback,
    limiter: {
      maxFailures: o.authMaxFailures,
      windowMs: o.authFailureWindowMs,
      blockMs: o.authBlockMs,
      maxTracked: o.authMaxTrackedAddresses,
    },
    allowedHosts,
    ...preAuthSlices(o, openFiles, sized.sized, logger),
    router: {
      naming: o.naming,
      maxToolsPerHost: o.maxToolsPerHost,
      ...toolLimits,
      compiler: new SchemaCompiler(
        { budgetMs: o.schemaCompileBudgetMs, windowMs: o.schemaCompileWindowMs, maxCodeBytes: o.maxSchemaCodeBytes, logger },
        compileWorker,
      ),
      logger,
    },
    endpoint: {
      maxPayload: o.maxPayload,
      perMessageDeflate: o.perMessageDeflate,
      allowedOrigins,
      loopbackDev: o.loopbackDev,
      maxConnections: o.maxConnections,
      maxConnectionsPerHost: o.maxConnectionsPerHost,
      closeWaitMs: o.cancelGraceMs,
      logger,
      session,
    },
    executor: {
      recordDir: o.recordDir,
      projectionHeadBytes: o.projectionHeadBytes,
      projectionTailBytes: o.projectionTailBytes,
      maxRecordLogBytes: o.maxRecordLogBytes,
      logLimits: { maxLogLinesPerHost: o.maxLogLinesPerHost, logWindowMs: o.logWindowMs },
      logger,
    },
    mcp: {
      maxSessions: o.mcpMaxSessions,
      maxSessionsPerCaller: o.mcpMaxSessionsPerCaller,
      maxListensPerCaller: o.mcpMaxListensPerCaller,
      maxInputDepth: o.mcpMaxInputDepth,
      sessionIdleMs: o.mcpSessionIdleMs,
      progressIntervalMs: o.progressIntervalMs,
      maxRequestBodyBytes: o.mcpMaxRequestBodyBytes,
      allowedOrigins,
      logger,
    },
    status: {
      recentCalls: o.statusRecentCalls,
      maxViewers: o.statusMaxViewers,
      sessionMs: o.statusSessionMs,
      maxSessions: o.statusMaxSessions,
      allowedOrigins,
      logger,
    },
  };
}
