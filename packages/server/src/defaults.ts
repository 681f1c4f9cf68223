/**
 * The defaults of the server options (DESIGN §8), in one frozen table: `resolveServerConfig` applies
 * them once (one spread) under what the caller gave.
 */
import { Defaults } from '@toolwire/protocol';
import { PreAuthCeilings } from './preauth/fd-limit.js';

/**
 * The default of every `ToolwireServerOptions` limit, in one place (wire limits shared with
 * the tool host come from protocol `Defaults`). Times in ms, sizes in bytes. Options without an
 * entry default to "none" (`hosts`, `callers`: none; `recordDir`, `toolControl`, `fallback`, `tls`:
 * off; `logger`: a silent pino logger). `maxConnections`, `maxPreAuthConnections` and
 * `maxPreAuthPerAddress` hold their ceilings: a server sizes them from its open-files limit at
 * start (never above these; see each option).
 */
export const ServerDefaults = Object.freeze({
  naming: 'qualified',
  maxPayload: Defaults.maxPayload,
  heartbeatMs: Defaults.heartbeatMs,
  deadlineMs: Defaults.deadlineMs,
  cancelGraceMs: Defaults.cancelGraceMs,
  maxToolsPerHost: Defaults.maxToolsPerHost,
  maxSchemaBytes: Defaults.maxSchemaBytes,
  maxSchemaDepth: Defaults.maxSchemaDepth,
  maxInFlightPerHost: Defaults.maxInFlightPerHost,
  maxBufferedBytesPerHost: Defaults.maxBufferedBytesPerHost,
  helloTimeoutMs: Defaults.helloTimeoutMs,
  maxBadFrames: Defaults.maxBadFrames,
  projectionHeadBytes: Defaults.projectionHeadBytes,
  projectionTailBytes: Defaults.projectionTailBytes,
  loopbackDev: false,
  maxDescriptionChars: Defaults.maxDescriptionChars,
  /** At most; lowered to fit the open-files limit (see `maxConnections`). */
  maxConnections: PreAuthCeilings.maxConnections,
  maxConnectionsPerHost: 4,
  allowedOrigins: Object.freeze<string[]>([]),
  perMessageDeflate: false,
  authMaxFailures: 10,
  authFailureWindowMs: 60_000,
  authBlockMs: 1_000,
  authMaxTrackedAddresses: 10_000,
  /** At most; lowered to fit the open-files limit (see `maxPreAuthConnections`). */
  maxPreAuthConnections: PreAuthCeilings.maxPreAuthConnections,
  /** At most; lowered to fit the open-files limit (see `maxPreAuthPerAddress`). */
  maxPreAuthPerAddress: PreAuthCeilings.maxPreAuthPerAddress,
  preAuthTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  /** 16 KiB. */
  maxHeaderBytes: 16 * 1024,
  maxHeadersCount: 100,
  mcpMaxSessions: 1024,
  mcpMaxSessionsPerCaller: 64,
  mcpMaxListensPerCaller: 16,
  mcpMaxInputDepth: 1000,
  /** 15 min. */
  mcpSessionIdleMs: 15 * 60_000,
  /** 4 MiB. */
  mcpMaxRequestBodyBytes: 4 * 1024 * 1024,
  progressIntervalMs: 5_000,
  /** 4 MiB. */
  outputWindowBytes: Defaults.outputWindowBytes,
  /** 256 KiB. */
  outputChunkBytes: Defaults.outputChunkBytes,
  /** 8 MiB (lowered to fit `maxPayload`, see the option). */
  maxCaptureBytes: Defaults.maxCaptureBytes,
  /** 64 MiB. */
  maxRecordLogBytes: 64 * 1024 * 1024,
  schemaCompileBudgetMs: 10_000,
  schemaCompileWindowMs: 60_000,
  /** 128 KiB. */
  maxSchemaCodeBytes: 128 * 1024,
  frameDecodeTimeoutMs: 10_000,
  /** 4 MiB. */
  advertiseCacheBytes: 4 * 1024 * 1024,
  maxLogLinesPerHost: 20,
  logWindowMs: 10_000,
  statusRecentCalls: 50,
  statusMaxViewers: 16,
  /** 12 h. */
  statusSessionMs: 12 * 60 * 60 * 1000,
  statusMaxSessions: 64,
});
