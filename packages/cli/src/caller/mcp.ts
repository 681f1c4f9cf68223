/**
 * The caller side of the server's MCP door, for `toolwire tools` and `toolwire call`: URL
 * normalisation, an SDK `Client` over Streamable HTTP with a bearer token, bounds on connecting and
 * on waiting, noticing a lost server, and the mapping of failures to CLI exit statuses.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ExitCode } from '@toolwire/protocol';
import pTimeout from 'p-timeout';
import { VERSION } from '../version.js';
import { withDefaultScheme } from '../endpoint.js';
import { ResponseWatch } from './response-watch.js';

/** Default time allowed to connect and initialize (and, for `toolwire tools`, each list request), ms. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** JSON-RPC code of the SDK's request timeout, as the plain number `McpError.code` is compared with. */
const REQUEST_TIMEOUT: number = ErrorCode.RequestTimeout;

/**
 * The MCP door URL for `server`: `ws://h:p[/…]` → `http://h:p/mcp` (`wss` → `https`);
 * `http(s)://h:p` or `http(s)://h:p/` → `…/mcp`; any other http(s) path is kept; `h:p` without a
 * scheme is taken as `http://h:p`.
 *
 * @throws TypeError for anything that is not a ws/wss/http/https URL
 */
export function mcpUrl(server: string): URL {
  let url: URL;
  try {
    url = new URL(withDefaultScheme(server, 'http'));
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(server)}`);
  }
  if (url.protocol === 'ws:' || url.protocol === 'wss:') {
    url = new URL(`${url.protocol === 'wss:' ? 'https:' : 'http:'}//${url.host}/mcp`);
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`not a ws://, wss://, http:// or https:// URL: ${JSON.stringify(server)}`);
  } else if (url.pathname === '/' || url.pathname === '') {
    url.pathname = '/mcp';
  }
  return url;
}

/**
 * The Streamable HTTP transport, remembering notifications in flight so a `notifications/cancelled`
 * sent on Ctrl-C reaches the server before the transport is closed, and showing every message it
 * delivers to a {@link ResponseWatch}.
 */
class WatchedTransport extends StreamableHTTPClientTransport {
  readonly #notifications = new Set<Promise<void>>();
  readonly #watch: ResponseWatch;

  constructor(url: URL, token: string, watch: ResponseWatch) {
    super(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: watch.fetch,
      // A CLI run is short: a broken notification stream is not dialled again (the watch decides).
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
    this.#watch = watch;
  }

  /** The SDK's `Protocol.connect` installs `onmessage` before calling `start()`: wrap it here. */
  override start(): Promise<void> {
    const deliver = this.onmessage;
    this.onmessage = (message) => {
      this.#watch.seen(message);
      deliver?.(message);
    };
    return super.start();
  }

  override send(message: JSONRPCMessage | JSONRPCMessage[], options?: Parameters<StreamableHTTPClientTransport['send']>[1]): Promise<void> {
    const sent = super.send(message, options);
    if (!Array.isArray(message) && 'method' in message && !('id' in message)) {
      const tracked: Promise<void> = sent.catch(() => {}).finally(() => this.#notifications.delete(tracked));
      this.#notifications.add(tracked);
    }
    return sent;
  }

  /** Wait (at most `ms`) for notifications still being posted. */
  async flush(ms: number): Promise<void> {
    await pTimeout(Promise.all(this.#notifications), { milliseconds: ms, message: false });
  }
}

/** The server went away while a request was waiting for its answer (exit 69, "lost the server"). */
export class ServerLostError extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.name = 'ServerLostError';
  }
}

/**
 * No answer within a bound the CLI set (exit 69): `phase` `connect` (connect + initialize, the
 * connect timeout) or `request` (a request's own bound); `bound` explains how `ms` was made up.
 */
export class NoAnswerError extends Error {
  constructor(
    readonly phase: 'connect' | 'request',
    readonly ms: number,
    readonly bound: string,
  ) {
    super(`no answer within ${ms} ms (${bound})`);
    this.name = 'NoAnswerError';
  }
}

/** A connected MCP client and a way to close it promptly. */
export interface McpSession {
  client: Client;
  /** Aborted (reason: an Error naming the cause) when a request's response stream ended without its answer. */
  lost: AbortSignal;
  /** Let pending notifications (at most `flushMs`) go out, then close client and transport. No timer is left. */
  close(flushMs?: number): Promise<void>;
}

/** Options of {@link connectMcp}. */
export interface ConnectOptions {
  /** Aborts the connect (Ctrl-C). */
  signal?: AbortSignal;
  /** Time allowed to connect and initialize, ms; default {@link DEFAULT_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
}

/**
 * Connect to the MCP door at `url` with `Authorization: Bearer <token>`, within `connectTimeoutMs`
 * (else rejects with a {@link NoAnswerError} of phase `connect`). Otherwise rejects like the SDK does
 * (see {@link mcpFailure} for the mapping to exit statuses).
 */
export async function connectMcp(url: URL, token: string, options: ConnectOptions = {}): Promise<McpSession> {
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const watch = new ResponseWatch();
  const transport = new WatchedTransport(url, token, watch);
  const client = new Client({ name: 'toolwire-cli', version: VERSION });
  client.onerror = () => {}; // broken streams surface through the watch; request failures reject their request
  const close = async (flushMs = 0): Promise<void> => {
    watch.close();
    if (flushMs > 0) await transport.flush(flushMs);
    await client.close().catch(() => {});
  };
  const noAnswer = new NoAnswerError('connect', connectTimeoutMs, 'connect timeout, --connect-timeout');
  try {
    const connecting = client.connect(transport, { ...(options.signal && { signal: options.signal }), timeout: connectTimeoutMs });
    await pTimeout(connecting, { milliseconds: connectTimeoutMs, message: noAnswer });
  } catch (error) {
    await close();
    throw error instanceof McpError && error.code === REQUEST_TIMEOUT && !options.signal?.aborted ? noAnswer : error;
  }
  return { client, lost: watch.lost, close };
}

/**
 * Run one request of `session` (`run` gets the signal to pass to the SDK), turning the ways it can
 * fail without an answer into CLI errors: the session's stream lost → {@link ServerLostError}; the
 * SDK's request timeout (`timeoutMs`, which `run` must pass) → {@link NoAnswerError} of phase
 * `request`, `bound` explaining it. An abort of `signal` (Ctrl-C) rejects as the SDK does.
 */
export async function boundedRequest<T>(
  session: McpSession,
  timeoutMs: number,
  bound: string,
  run: (signal: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await run(signal ? AbortSignal.any([signal, session.lost]) : session.lost);
  } catch (error) {
    if (signal?.aborted) throw error;
    if (session.lost.aborted) throw new ServerLostError(session.lost.reason);
    if (error instanceof McpError && error.code === REQUEST_TIMEOUT) throw new NoAnswerError('request', timeoutMs, bound);
    throw error;
  }
}

/** The most telling reason in a fetch error's `cause`: an errno code (ECONNREFUSED…) or its message. */
function causeOf(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } } | undefined)?.cause;
  return cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message;
}

/** The limit in the SDK's 413 answer ("Request body must not exceed N bytes"), when it names one. */
function bodyLimitOf(error: StreamableHTTPError): number | undefined {
  const match = /must not exceed (\d+) bytes/.exec(error.message);
  return match ? Number(match[1]) : undefined;
}

/**
 * The exit status and stderr line for a failed MCP exchange. `phase`: `connect` (before the session
 * was open) or `request` (a network failure then means the server was lost).
 * - HTTP 401/403 or an SDK `UnauthorizedError` → 77 (`NO_PERM`)
 * - HTTP 413 → 64 (`USAGE`), `toolwire: input too large: the server accepts at most N bytes`
 * - {@link ServerLostError}, or connection refused/reset during a request → 69, `toolwire: lost the server <url>: …`
 * - {@link NoAnswerError} → 69, naming the bound (`cannot reach server` while connecting)
 * - connection refused / DNS / reset while connecting, or any other HTTP error status → 69 (`UNAVAILABLE`),
 *   `toolwire: cannot reach server <url>: …`
 * - any other JSON-RPC error → 69, `toolwire: server error: …`
 * - anything else → 70 (`SOFTWARE`)
 */
export function mcpFailure(error: unknown, url: URL, phase: 'connect' | 'request' = 'connect'): { code: number; message: string } {
  const unavailable = (message: string) => ({ code: ExitCode.UNAVAILABLE, message: `toolwire: ${message}\n` });
  if (error instanceof UnauthorizedError) return { code: ExitCode.NO_PERM, message: `toolwire: token refused by ${url.href}\n` };
  if (error instanceof ServerLostError) return unavailable(`lost the server ${url.href}: ${error.message}`);
  if (error instanceof NoAnswerError) {
    return error.phase === 'connect'
      ? unavailable(`cannot reach server ${url.href}: ${error.message}`)
      : unavailable(`no answer from ${url.href} within ${error.ms} ms (${error.bound}); giving up`);
  }
  if (error instanceof StreamableHTTPError) {
    if (error.code === 401 || error.code === 403) {
      return { code: ExitCode.NO_PERM, message: `toolwire: token refused by ${url.href} (HTTP ${error.code})\n` };
    }
    if (error.code === 413) {
      const limit = bodyLimitOf(error);
      const accepts = limit === undefined ? 'less (HTTP 413 Payload Too Large)' : `at most ${limit} bytes`;
      return { code: ExitCode.USAGE, message: `toolwire: input too large: the server accepts ${accepts}\n` };
    }
    return unavailable(`cannot reach server ${url.href}: ${error.message}`);
  }
  if (error instanceof McpError) {
    if (error.code === REQUEST_TIMEOUT) return unavailable(`no answer from ${url.href}: ${error.message}`);
    return unavailable(`server error: ${error.message}`);
  }
  const cause = causeOf(error);
  if (error instanceof TypeError && (cause !== undefined || error.message === 'fetch failed')) {
    return phase === 'request'
      ? unavailable(`lost the server ${url.href}: ${cause ?? error.message}`)
      : unavailable(`cannot reach server ${url.href}: ${cause ?? error.message}`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: ExitCode.SOFTWARE, message: `toolwire: ${message}\n` };
}
