/**
 * The stdio door (`toolwire mcp`): an MCP server on stdin/stdout (MCP SDK `Server` +
 * `StdioServerTransport`) that forwards to the server's `/mcp` door (SDK `Client` +
 * `StreamableHTTPClientTransport`, `Authorization: Bearer <caller token>`), for MCP clients that
 * only start stdio servers or cannot send a header.
 *
 * - `tools/list` and `tools/call` are forwarded as they came (raw params: the SDK's schema parsing of
 *   the stdio request is bypassed, so the arguments reach the door key for key), and their results
 *   come back unchanged; every other request but `initialize`/`ping` is "method not found". Arguments
 *   whose text `JSON.parse` would change (a repeated key, a number a double cannot hold: the door's
 *   own check, `argumentsAsSent`) are forwarded as the text that was sent, so the door refuses the
 *   call 65 with the reason as it does for an HTTP caller.
 * - Cancellation: a `notifications/cancelled` for a forwarded request, whatever its id (0 and `""`
 *   included), aborts the upstream request, which the SDK client cancels on the door.
 * - Progress: a `tools/call` with `_meta.progressToken` gets the door's `notifications/progress`
 *   under its own token. (`_meta["toolwire/stream"]` live output is not forwarded: dropped.)
 * - List changes: the door's `notifications/tools/list_changed` is passed on.
 * - The door's session is opened at start (its `instructions` become this server's); a lost session
 *   (HTTP 404: the server restarted or the session expired) is opened again once and the request
 *   retried. When stdin ends, calls in flight are cancelled, the session is ended (DELETE) and
 *   {@link StdioBridge.closed} resolves.
 */
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, type JSONRPCRequest, McpError, type Progress, ResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { argumentsAsSent } from '@toolwire/server';
import pTimeout from 'p-timeout';
import { VERSION } from '../version.js';
import { tlsReason } from './tls-reason.js';

/** Longest wait for one forwarded request's answer, ms: the server's call deadline ends a call first. 24 h. */
export const FORWARD_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** Time allowed at the end for the door's session to be ended (DELETE), ms. */
const CLOSE_TIMEOUT_MS = 2_000;
/** `_meta` key asking the door for live output notifications, which this bridge does not forward. */
const STREAM_META = 'toolwire/stream';
/** A stdin line longer than this is not looked at here (the stdio transport refuses past 10 MiB). */
const MAX_LINE_CHARS = 10 * 1024 * 1024;
/** Arguments texts kept for requests not yet forwarded, at most (older ones are forgotten). */
const MAX_AS_SENT = 1024;

/** Options of {@link StdioBridge.start}. */
export interface BridgeOptions {
  /** The door, e.g. `http://127.0.0.1:7700/mcp`. */
  url: URL;
  /** Caller token (never logged). */
  token: string;
  /** Time allowed to open the door's session, ms. */
  connectTimeoutMs: number;
  stdin: Readable;
  stdout: Writable;
  /** Where one-line notes go (stderr: MCP clients show it as the server's log). */
  log: (line: string) => void;
}

/** The door's session, opened again when the door has lost it. */
class Upstream {
  readonly #options: BridgeOptions;
  readonly #onListChanged: () => void;
  #client: Promise<Client> | undefined;
  /** Arguments to send as text: marker key → the text (see {@link Upstream.asSent}). */
  readonly #asSent = new Map<string, string>();

  constructor(options: BridgeOptions, onListChanged: () => void) {
    this.#options = options;
    this.#onListChanged = onListChanged;
  }

  /** The open session's client, opening one when there is none. Rejects as `Client.connect` does. */
  client(): Promise<Client> {
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  async #connect(): Promise<Client> {
    const { url, token, connectTimeoutMs } = this.#options;
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: (input, init) => fetch(input, this.#withText(init)),
    });
    const client = new Client({ name: 'toolwire-mcp', version: VERSION }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#onListChanged());
    client.onerror = () => {}; // a dropped notification stream is re-opened by the transport
    try {
      await client.connect(transport, { timeout: connectTimeoutMs });
    } catch (error) {
      await client.close();
      throw error;
    }
    return client;
  }

  /**
   * Send `method` with `params` (as given) and resolve with the door's result. A lost session (404)
   * is opened again and the request sent once more; `reopened` is told.
   */
  async request(method: string, params: Record<string, unknown> | undefined, options: RequestOptions, reopened: () => void): Promise<unknown> {
    const client = await this.client();
    const message = { method, ...(params !== undefined && { params }) };
    try {
      return await client.request(message, ResultSchema, options);
    } catch (error) {
      if (!(error instanceof StreamableHTTPError && error.code === 404) || options.signal?.aborted) throw error;
      this.#options.log('toolwire mcp: the server no longer knows this session; opening a new one');
      if ((await this.#client) === client) this.#client = undefined;
      void client.close();
      const again = await this.client();
      reopened();
      return again.request(message, ResultSchema, options);
    }
  }

  /**
   * Arguments that stand for `text` in a request: its body carries `text` itself in their place
   * until `release` is called.
   */
  asSent(text: string): { placeholder: Record<string, number>; release: () => void } {
    const key = `toolwire/arguments-as-sent/${randomUUID()}`;
    this.#asSent.set(key, text);
    return { placeholder: { [key]: 0 }, release: () => this.#asSent.delete(key) };
  }

  #withText(init: RequestInit | undefined): RequestInit | undefined {
    if (this.#asSent.size === 0 || typeof init?.body !== 'string') return init;
    let body = init.body;
    for (const [key, text] of this.#asSent) body = body.replace(`{${JSON.stringify(key)}:0}`, () => text);
    return { ...init, body };
  }

  /** End the session (DELETE, bounded) and close the client. */
  async close(): Promise<void> {
    const pending = this.#client;
    this.#client = undefined;
    const client = await pending?.catch(() => undefined);
    if (client === undefined) return;
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    await pTimeout(transport?.terminateSession() ?? Promise.resolve(), { milliseconds: CLOSE_TIMEOUT_MS, message: false }).catch(() => {});
    await client.close();
  }
}

/**
 * The exit status (as a sysexits number) and stderr line for a failure of {@link StdioBridge.start}:
 * HTTP 401/403 → 77; any other HTTP status, an unreachable server or no answer in time → 69; else 70.
 */
export function startFailure(error: unknown, url: URL): { code: 69 | 70 | 77; message: string } {
  const text = error instanceof Error ? error.message : String(error);
  if (error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403)) {
    return { code: 77, message: `toolwire mcp: token refused by ${url.href} (HTTP ${error.code})` };
  }
  if (error instanceof StreamableHTTPError || error instanceof TypeError || error instanceof McpError) {
    const cause = (error as { cause?: { code?: unknown } }).cause?.code;
    const why = tlsReason(error) ?? (typeof cause === 'string' ? cause : text);
    return { code: 69, message: `toolwire mcp: cannot reach server ${url.href}: ${why}` };
  }
  return { code: 70, message: `toolwire mcp: ${text}` };
}

/** A JSON-RPC message as the stdio transport hands it on (only what the bridge looks at). */
interface Message {
  method?: unknown;
  id?: unknown;
  params?: { requestId?: unknown; reason?: unknown } | undefined;
}

/** A running stdio door. */
export class StdioBridge {
  readonly #upstream: Upstream;
  readonly #server: Server;
  /** Forwarded requests in flight, by their stdio request id (any JSON-RPC id, 0 and "" included). */
  readonly #inFlight = new Map<string | number, AbortController>();
  /** `tools/call` arguments to forward as the text sent, by stdio request id (filled as stdin is read). */
  readonly #asSent = new Map<string | number, string>();
  /** The stdin text after its last newline. */
  #partial = '';
  readonly #decoder = new StringDecoder('utf8');
  readonly #closed: Promise<void>;
  #closing = false;

  private constructor(options: BridgeOptions, upstream: Upstream, instructions: string | undefined) {
    this.#upstream = upstream;
    this.#server = new Server({ name: 'toolwire', version: VERSION }, { capabilities: { tools: { listChanged: true } }, ...(instructions && { instructions }) });
    this.#server.fallbackRequestHandler = (request, extra) => this.#forward(request, extra);
    let ended!: () => void;
    this.#closed = new Promise<void>((resolve) => (ended = resolve));
    const end = (): void => void this.close().then(ended);
    options.stdin.once('end', end);
    options.stdin.once('close', end);
    this.#server.onclose = end;
  }

  /**
   * Open the door's session (within `connectTimeoutMs`), then serve MCP on stdin/stdout. Rejects
   * with the connect error (an SDK `StreamableHTTPError` for an HTTP status, a `TypeError` from
   * fetch for an unreachable server, an `McpError` for a timeout) before anything is written to stdout.
   */
  static async start(options: BridgeOptions): Promise<StdioBridge> {
    let bridge: StdioBridge | undefined;
    const upstream = new Upstream(options, () => {
      if (bridge !== undefined) bridge.#listChanged();
    });
    const client = await upstream.client();
    bridge = new StdioBridge(options, upstream, client.getInstructions());
    const transport = new StdioServerTransport(options.stdin, options.stdout);
    // Read each line before the transport parses it (listeners run in order): see the arguments as sent.
    options.stdin.on('data', (chunk: Buffer | string) => bridge.#read(chunk));
    await bridge.#server.connect(transport);
    // See every cancellation before the SDK does: its own handler ignores a falsy request id.
    const deliver = transport.onmessage;
    transport.onmessage = (message) => {
      bridge.#noteCancel(message as Message);
      deliver?.(message);
    };
    return bridge;
  }

  /** Resolves once stdin has ended (or the transport closed) and everything is closed. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Cancel calls in flight, end the door's session, close stdio. Idempotent. */
  async close(): Promise<void> {
    if (this.#closing) return this.#closed;
    this.#closing = true;
    for (const controller of this.#inFlight.values()) controller.abort(new Error('the stdio client went away'));
    await this.#upstream.close();
    await this.#server.close();
  }

  #noteCancel(message: Message): void {
    if (message.method !== 'notifications/cancelled' || 'id' in message) return;
    const id = message.params?.requestId;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    const reason = typeof message.params?.reason === 'string' ? message.params.reason : 'cancelled by the client';
    this.#inFlight.get(id)?.abort(new Error(reason));
  }

  /** Note the arguments text of each `tools/call` on a complete stdin line that `JSON.parse` would change. */
  #read(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      const line = this.#partial + text.slice(start, nl);
      if (line.length <= MAX_LINE_CHARS && (line.includes('tools/call') || line.includes('\\'))) {
        for (const [id, args] of argumentsAsSent(line.replace(/\r$/, '')) ?? []) {
          if (this.#asSent.size >= MAX_AS_SENT) this.#asSent.delete(this.#asSent.keys().next().value!);
          this.#asSent.set(id, args);
        }
      }
      this.#partial = '';
      start = nl + 1;
    }
    // A line past the bound is not kept whole (it is passed over at its newline).
    this.#partial = this.#partial.length > MAX_LINE_CHARS ? this.#partial : this.#partial + text.slice(start);
  }

  #listChanged(): void {
    this.#server.sendToolListChanged().catch(() => {}); // before initialization nothing is listening
  }

  async #forward(
    request: JSONRPCRequest,
    extra: { signal: AbortSignal; requestId: string | number; sendNotification: (n: never) => Promise<void> },
  ): Promise<never> {
    if (request.method !== 'tools/list' && request.method !== 'tools/call') {
      throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
    }
    const own = new AbortController();
    this.#inFlight.set(extra.requestId, own);
    const signal = AbortSignal.any([own.signal, extra.signal]);
    const text = this.#asSent.get(extra.requestId);
    this.#asSent.delete(extra.requestId);
    const sent = request.method === 'tools/call' && text !== undefined ? this.#upstream.asSent(text) : undefined;
    try {
      const params = request.params;
      const options: RequestOptions = { signal, timeout: FORWARD_TIMEOUT_MS };
      let forwarded = params;
      if (request.method === 'tools/call' && params !== undefined) {
        const { _meta: meta, ...rest } = params as { _meta?: Record<string, unknown> };
        const upstreamMeta: Record<string, unknown> = { ...meta };
        const token = upstreamMeta.progressToken;
        delete upstreamMeta.progressToken;
        delete upstreamMeta[STREAM_META];
        forwarded = Object.keys(upstreamMeta).length > 0 ? { ...rest, _meta: upstreamMeta } : rest;
        if (sent !== undefined) forwarded = { ...forwarded, arguments: sent.placeholder };
        if (typeof token === 'string' || typeof token === 'number') {
          const send = extra.sendNotification as unknown as (n: { method: string; params: object }) => Promise<void>;
          options.onprogress = (progress: Progress) =>
            void send({ method: 'notifications/progress', params: { ...progress, progressToken: token } }).catch(() => {});
        }
      }
      return (await this.#upstream.request(request.method, forwarded, options, () => this.#listChanged())) as never;
    } finally {
      sent?.release();
      if (this.#inFlight.get(extra.requestId) === own) this.#inFlight.delete(extra.requestId);
    }
  }
}
