/**
 * Options of the tool host and their defaults (DESIGN §8). Caller misuse throws at once
 * (TypeError / RangeError).
 */
import { Defaults } from '@toolwire/protocol';
import { pino } from 'pino';
import type { AdmissionLimits } from '../calls/admission.js';
import type { BackoffOptions } from '../connection/backoff.js';
import { CREDENTIAL_VARS, type EnvPolicy } from '../subprocess/tool-env.js';
import type { Logger } from '../types.js';

/** Options of `ToolHost`. Times in ms, sizes in bytes. */
export interface ToolHostOptions {
  /** The server's WebSocket URL, `ws://` or `wss://`, e.g. `ws://127.0.0.1:7700`. Required. */
  server: string;
  /** Host token, sent as `Authorization: Bearer <token>` at the upgrade; it names the host on the server. */
  token?: string;
  /** Self-declared host name (`hello.name`); honoured only by a server in loopback dev mode. */
  name?: string;
  /** Working directory of subprocess tools without a `cwd`, and base of a relative `cwd`. Default `process.cwd()`. */
  root?: string;
  /** SIGTERM → SIGKILL grace when a call is cancelled or hits its deadline. Default 2000. */
  cancelGraceMs?: number;
  /** How long a finished or killed tool's pipes are still read (grandchildren may hold them). Default 500. */
  drainMs?: number;
  /**
   * Capture cap per stream (head + tail kept, marker line between). Default 8 MiB; lowered per
   * connection so a `result` frame fits the server's `welcome.limits.maxPayload`.
   */
  maxCaptureBytes?: number;
  /**
   * Spawn subprocess tools from a small helper process (one per host process, started with the
   * first subprocess tool) instead of from the host itself: a fork copies the spawning process's
   * page tables, so this is cheaper per tool and the host's event loop does not stop for it.
   * Default true (env `TOOLWIRE_SPAWN_HELPER=0` turns the default off). Captures are the same.
   */
  spawnHelper?: boolean;
  /**
   * Send each call's output while the tool runs (live output, protocol 2) when the server offers a
   * window (`welcome.output`). Default true; false: every call's output travels in its one result,
   * head + tail capped, as with a server that does not take live output (`ctx.progress` sends nothing).
   */
  liveOutput?: boolean;
  /**
   * Keep metrics of this host's calls (issue 16), read with `ToolHost.scrapeMetrics()` as OpenMetrics
   * text (`toolwire host --metrics-listen` serves them). Default false.
   */
  metrics?: boolean;
  /** Largest frame accepted from the server (a `call` with its input). Default 16 MiB; over → the socket closes 1009. */
  maxPayload?: number;
  /**
   * Calls running at once on this host (subprocess tools and in-process handlers that have not
   * returned), whatever the server sends; a tool's own `maxConcurrency` lowers it for that tool.
   * More wait in a queue (their deadline runs meanwhile). Default 16; at least 1.
   */
  maxConcurrentCalls?: number;
  /**
   * Calls waiting for a place to run. A call past it is answered 75 (`overloaded`) at once and never
   * started. Default 256; 0 answers 75 every call that cannot run at once.
   */
  maxQueuedCalls?: number;
  /**
   * Input bytes held for calls running or waiting, counted as the size of each `call` frame. A call
   * that would pass it is answered 75 at once and never started. Default 64 MiB, and at least
   * `maxPayload` (so a call of the largest frame accepted fits).
   */
  maxInFlightInputBytes?: number;
  /** Time allowed for the upgrade and for `welcome` after `hello`; then the connection is dropped and retried. Default 10000. */
  welcomeTimeoutMs?: number;
  /**
   * Reconnect after a lost connection or failed dial, with exponential backoff and full jitter:
   * `delay = random(0, min(maxMs, baseMs · 2^attempt))`, reset after each `welcome`.
   * `true` (default): 250 ms → 30 s. `false`: one attempt; `start()` rejects when it fails.
   */
  reconnect?: boolean | { baseMs?: number; maxMs?: number };
  /** Default: pino at level `warn`, to stderr. */
  logger?: Logger;
  /** Trusted CA certificate(s), PEM, for a `wss://` server with a private CA. */
  ca?: string | Buffer;
  /**
   * Whether subprocess tools inherit the host's environment. `true` (default): all of it, minus the
   * host's credentials; `false`: only `PATH`, `HOME`, `LANG`, `TERM`, `USER`, `SHELL`, `TMPDIR` and
   * the tool's `envPassthrough`. Either way the tool's `env` and the `TOOLWIRE_*` call facts are added.
   */
  inheritEnv?: boolean;
  /**
   * More variable names to remove from every tool's environment (e.g. where the token came from).
   * `TOOLWIRE_TOKEN` and `TOOLWIRE_TOKEN_FILE` are always removed, and so is any variable whose value
   * is `token`. Names, not values: a token never needs to be listed here.
   */
  scrubEnv?: readonly string[];
}

/** Options with every default filled in. */
export interface ResolvedHostOptions {
  server: string;
  token: string | undefined;
  name: string | undefined;
  root: string;
  cancelGraceMs: number;
  drainMs: number;
  maxCaptureBytes: number;
  spawnHelper: boolean;
  liveOutput: boolean;
  metrics: boolean;
  maxPayload: number;
  limits: AdmissionLimits;
  welcomeTimeoutMs: number;
  reconnect: BackoffOptions | false;
  logger: Logger;
  ca: string | Buffer | undefined;
  env: EnvPolicy;
}

function integer(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min) throw new RangeError(`ToolHostOptions.${name} must be an integer ≥ ${min}, got ${v}`);
  return v;
}

function boolean(name: string, value: boolean | undefined, fallback: boolean): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`ToolHostOptions.${name} must be a boolean, got ${typeof value}`);
  return value ?? fallback;
}

function scrubNames(value: readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((n) => typeof n === 'string')) throw new TypeError('ToolHostOptions.scrubEnv must be an array of variable names');
  return value;
}

function resolveReconnect(value: ToolHostOptions['reconnect']): BackoffOptions | false {
  if (value === false) return false;
  const o = value === true || value === undefined ? {} : value;
  const baseMs = integer('reconnect.baseMs', o.baseMs, Defaults.reconnectBaseMs, 0);
  const maxMs = integer('reconnect.maxMs', o.maxMs, Math.max(Defaults.reconnectMaxMs, baseMs), 0);
  if (maxMs < baseMs) throw new RangeError(`ToolHostOptions.reconnect.maxMs (${maxMs}) must be ≥ baseMs (${baseMs})`);
  return { baseMs, maxMs };
}

/** What an `Authorization: Bearer <token>` header cannot carry: whitespace, control characters, characters past U+00FF. */
// eslint-disable-next-line no-control-regex
const UNSENDABLE_TOKEN = /[\s\u0000-\u001f\u007f]|[^\u0000-\u00ff]/;

/** Fill defaults and check every option. */
export function resolveHostOptions(options: ToolHostOptions): ResolvedHostOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('ToolHost needs an options object');
  let url: URL;
  try {
    url = new URL(options.server);
  } catch {
    throw new TypeError(`ToolHostOptions.server must be a ws:// or wss:// URL, got ${JSON.stringify(options.server)}`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new TypeError(`ToolHostOptions.server must be a ws:// or wss:// URL, got ${JSON.stringify(options.server)}`);
  }
  // The WebSocket client throws on a fragment at the dial (outside any handler); `ws://h:p#` has an empty `hash`.
  if (url.hash !== '' || url.href.includes('#')) {
    throw new TypeError(`ToolHostOptions.server must be a ws:// or wss:// URL without a #fragment, got ${JSON.stringify(options.server)}`);
  }
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) {
    throw new TypeError('ToolHostOptions.token must be a non-empty string');
  }
  // Node refuses such a header value with a throw inside the dial; a server refuses whitespace in a token anyway.
  if (options.token !== undefined && UNSENDABLE_TOKEN.test(options.token)) {
    throw new TypeError('ToolHostOptions.token must not hold whitespace or control characters (it travels as "Bearer <token>")');
  }
  if (options.name !== undefined && typeof options.name !== 'string') throw new TypeError('ToolHostOptions.name must be a string');
  const maxPayload = integer('maxPayload', options.maxPayload, Defaults.maxPayload, 1);
  return {
    server: url.href,
    token: options.token,
    name: options.name,
    root: options.root ?? process.cwd(),
    cancelGraceMs: integer('cancelGraceMs', options.cancelGraceMs, Defaults.cancelGraceMs, 0),
    drainMs: integer('drainMs', options.drainMs, Defaults.drainMs, 0),
    maxCaptureBytes: integer('maxCaptureBytes', options.maxCaptureBytes, Defaults.maxCaptureBytes, 0),
    spawnHelper: boolean('spawnHelper', options.spawnHelper, process.env.TOOLWIRE_SPAWN_HELPER !== '0'),
    liveOutput: boolean('liveOutput', options.liveOutput, true),
    metrics: boolean('metrics', options.metrics, false),
    maxPayload,
    limits: {
      maxConcurrentCalls: integer('maxConcurrentCalls', options.maxConcurrentCalls, Defaults.maxConcurrentCalls, 1),
      maxQueuedCalls: integer('maxQueuedCalls', options.maxQueuedCalls, Defaults.maxQueuedCalls, 0),
      maxInputBytes: integer('maxInFlightInputBytes', options.maxInFlightInputBytes, Math.max(Defaults.maxInFlightInputBytes, maxPayload), maxPayload),
    },
    welcomeTimeoutMs: integer('welcomeTimeoutMs', options.welcomeTimeoutMs, Defaults.helloTimeoutMs, 1),
    reconnect: resolveReconnect(options.reconnect),
    logger: options.logger ?? pino({ level: 'warn' }, pino.destination({ dest: 2, sync: true })),
    ca: options.ca,
    env: {
      inherit: boolean('inheritEnv', options.inheritEnv, true),
      scrub: new Set([...CREDENTIAL_VARS, ...scrubNames(options.scrubEnv)]),
      secret: options.token,
    },
  };
}
