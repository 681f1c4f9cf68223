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
import { PassThrough } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, type JSONRPCRequest, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { argumentsAsSent } from '@toolwire/server';
import { VERSION } from '../version.js';
import { tlsReason } from './tls-reason.js';
import { type BridgeOptions, Upstream } from './upstream.js';

export type { BridgeOptions } from './upstream.js';

/** Longest wait for one forwarded request's answer, ms: the server's call deadline ends a call first. 24 h. */
export const FORWARD_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** `_meta` key asking the door for live output notifications, which this bridge does not forward. */
const STREAM_META = 'toolwire/stream';
/** Longest stdin line (one message), bytes (as characters while it is read); a longer one is dropped with a note on stderr. */
const MAX_LINE_BYTES = 10 * 1024 * 1024;
/** Arguments texts kept for requests not yet forwarded, at most (older ones are forgotten). */
const MAX_AS_SENT = 1024;

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
  /** The rest of the current stdin line is dropped (it is past {@link MAX_LINE_BYTES}). */
  #dropping = false;
  /** What the SDK's stdio transport reads: the lines of stdin within {@link MAX_LINE_BYTES} (its own bound closes the transport). */
  readonly #feed = new PassThrough();
  readonly #log: (line: string) => void;
  readonly #decoder = new StringDecoder('utf8');
  readonly #closed: Promise<void>;
  #closing = false;

  private constructor(options: BridgeOptions, upstream: Upstream, instructions: string | undefined) {
    this.#upstream = upstream;
    this.#log = options.log;
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
    const transport = new StdioServerTransport(bridge.#feed, options.stdout, { maxBufferSize: 2 * MAX_LINE_BYTES + 2 });
    // Each line is read here before the transport parses it: the arguments as sent, and the bound.
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

  /**
   * Pass each complete stdin line within {@link MAX_LINE_BYTES} on to the transport, noting the
   * arguments text of each `tools/call` that `JSON.parse` would change; drop a longer line (its
   * request gets no answer: its id is not read) with a note on stderr.
   */
  #read(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      const line = this.#partial + text.slice(start, nl);
      this.#partial = '';
      start = nl + 1;
      if (this.#dropping) {
        this.#dropping = false;
        continue;
      }
      if (line.length > MAX_LINE_BYTES || Buffer.byteLength(line) > MAX_LINE_BYTES) {
        this.#dropped();
        continue;
      }
      if (line.includes('tools/call') || line.includes('\\')) {
        for (const [id, args] of argumentsAsSent(line.replace(/\r$/, '')) ?? []) {
          if (this.#asSent.size >= MAX_AS_SENT) this.#asSent.delete(this.#asSent.keys().next().value!);
          this.#asSent.set(id, args);
        }
      }
      this.#feed.write(`${line}\n`);
    }
    if (this.#dropping) return;
    const rest = text.slice(start);
    if (this.#partial.length + rest.length <= MAX_LINE_BYTES) this.#partial += rest;
    else {
      this.#partial = '';
      this.#dropping = true; // until its newline
      this.#dropped();
    }
  }

  #dropped(): void {
    this.#log(`toolwire mcp: dropped a message of more than ${MAX_LINE_BYTES} bytes on stdin (the bound of one message); its request gets no answer`);
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
