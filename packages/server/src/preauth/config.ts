/**
 * The pre-auth and node:http slices of the server's options (issue 11 §2), and what the server
 * logs about them at start: the open-files limit, the connection caps in force, and a warning when
 * the caps do not fit the limit.
 */
import type { ServerOptions as HttpServerOptions } from 'node:http';
import type { Logger } from '../options.js';
import { type OpenFilesLimit, RESERVED_DESCRIPTORS, type SizedDefaults, sizeFromOpenFiles } from './fd-limit.js';
import type { PreAuthOptions } from './guard.js';

/** The `node:http` server knobs (the `ToolwireServerOptions` of the same names; ms, bytes). */
export interface HttpOptions {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderBytes: number;
  maxHeadersCount: number;
}

/** The open-files limit and the connection caps in force, for the start log. */
export interface Descriptors {
  openFiles: OpenFilesLimit;
  maxConnections: number;
  maxPreAuthConnections: number;
  maxPreAuthPerAddress: number;
  /** Which of the three were sized from the limit (not given as options). */
  sized: readonly (keyof SizedDefaults)[];
}

/** The option values this module reads, resolved. */
export type PreAuthValues = HttpOptions & SizedDefaults & { preAuthTimeoutMs: number };

/** How often node:http checks `headersTimeout` and `requestTimeout`, ms (its default, 30 s, would stretch both). */
const CONNECTIONS_CHECK_MS = 1_000;

/**
 * The connection defaults sized from `openFiles`, and a function that reports which of them the
 * options left to it (`given`: the options actually set).
 */
export function sizedDefaults(openFiles: OpenFilesLimit, given: Partial<SizedDefaults>): { defaults: SizedDefaults; sized: (keyof SizedDefaults)[] } {
  const defaults = sizeFromOpenFiles(openFiles.limit);
  return { defaults, sized: (Object.keys(defaults) as (keyof SizedDefaults)[]).filter((key) => given[key] === undefined) };
}

/**
 * Cut the pre-auth guard's options, the http knobs and the start-log facts out of resolved values.
 * @throws RangeError when `headersTimeoutMs` exceeds `requestTimeoutMs` (node:http would refuse it)
 */
export function preAuthSlices(
  o: PreAuthValues,
  openFiles: OpenFilesLimit,
  sized: readonly (keyof SizedDefaults)[],
  logger: Logger,
): { preAuth: PreAuthOptions; http: HttpOptions; descriptors: Descriptors } {
  if (o.headersTimeoutMs > o.requestTimeoutMs) {
    throw new RangeError(`ToolwireServerOptions.headersTimeoutMs (${o.headersTimeoutMs}) must not exceed requestTimeoutMs (${o.requestTimeoutMs})`);
  }
  return {
    preAuth: { maxConnections: o.maxPreAuthConnections, maxPerAddress: o.maxPreAuthPerAddress, timeoutMs: o.preAuthTimeoutMs, logger },
    http: {
      headersTimeoutMs: o.headersTimeoutMs,
      requestTimeoutMs: o.requestTimeoutMs,
      keepAliveTimeoutMs: o.keepAliveTimeoutMs,
      maxHeaderBytes: o.maxHeaderBytes,
      maxHeadersCount: o.maxHeadersCount,
    },
    descriptors: {
      openFiles,
      maxConnections: o.maxConnections,
      maxPreAuthConnections: o.maxPreAuthConnections,
      maxPreAuthPerAddress: o.maxPreAuthPerAddress,
      sized,
    },
  };
}

/** The `node:http`/`node:https` server options for {@link HttpOptions} (`keepAliveTimeout` and `maxHeadersCount` are set on the server). */
export function httpServerOptions(http: HttpOptions): HttpServerOptions {
  return {
    maxHeaderSize: http.maxHeaderBytes,
    headersTimeout: http.headersTimeoutMs,
    requestTimeout: http.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(CONNECTIONS_CHECK_MS, http.headersTimeoutMs),
  };
}

/**
 * Log the open-files limit and the caps in force at info, e.g. `open-files limit 1024 from
 * /proc/self/limits: unauthenticated connections at most 120 (30 per address), host connections at
 * most 480 (sized from it: …)`; warn when `maxConnections + maxPreAuthConnections + 64` exceeds it.
 */
export function logDescriptors(d: Descriptors, logger: Logger): void {
  const limit = d.openFiles.limit === Infinity ? 'unlimited' : String(d.openFiles.limit);
  const fields = { openFiles: d.openFiles.limit === Infinity ? 'unlimited' : d.openFiles.limit, source: d.openFiles.source };
  const from = d.openFiles.source === 'fallback' ? `assumed (${d.openFiles.why ?? 'unknown'})` : `from ${d.openFiles.source}`;
  const sized = d.sized.length === 0 ? 'all caps given as options' : `sized from it: ${d.sized.join(', ')}`;
  logger.info(
    { ...fields, maxPreAuthConnections: d.maxPreAuthConnections, maxPreAuthPerAddress: d.maxPreAuthPerAddress, maxConnections: d.maxConnections },
    `open-files limit ${limit} ${from}: unauthenticated connections at most ${d.maxPreAuthConnections} ` +
      `(${d.maxPreAuthPerAddress} per address), host connections at most ${d.maxConnections} (${sized})`,
  );
  const needed = d.maxConnections + d.maxPreAuthConnections + RESERVED_DESCRIPTORS;
  if (needed > d.openFiles.limit) {
    logger.warn(
      { ...fields, needed },
      `open-files limit ${limit} is below maxConnections + maxPreAuthConnections + ${RESERVED_DESCRIPTORS} (${needed}): ` +
        'raise it (ulimit -n, systemd LimitNOFILE=) or lower those limits',
    );
  }
}
