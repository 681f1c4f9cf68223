/**
 * A session's plain `tools/call`, answered by the door itself: one request in one POST, asking for
 * no progress and no live output, with nothing in it that the SDK would refuse or treat otherwise.
 * What an agent sends on almost every call; through the SDK's session transport each one costs a
 * Node → Web `Request` conversion, a zod parse of the message, a `ReadableStream` and a Web
 * `Response` written back by the Node adapter. The answer on the wire is the SDK's, byte for byte:
 * the same SSE response (status, headers, `event: message` / `data:` event, keep-alive comments
 * every 15 s; chunked, as the SDK's Node adapter sends an answer not complete within its first
 * timer tick, ≥ 1 ms — it gives one ready sooner a `content-length`), the same JSON-RPC result (key order as the SDK's result validation leaves it), no
 * answer for a call cancelled by `notifications/cancelled` or ended with its session (its stream
 * stays open until the session ends or the client leaves, as the SDK's does). Anything else — a
 * batch, a notification, a progress token, `toolwire/stream`, an unsupported or mismatched
 * `MCP-Protocol-Version`, an `Accept` or `Content-Type` the SDK would refuse, a request id already
 * running, a malformed `_meta` value, a result of a tool of an MCP server (its content blocks go
 * through the SDK's validation) — goes to the SDK transport as before.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { Executor } from '../executor/executor.js';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { type CallerPrincipal, DEADLINE_META, type ToolCall, type ToolSource, WORKSPACE_META, executeRequestOf } from './caller.js';
import { STREAM_META } from './live-output.js';
import { ownsOutputSchema, toCallToolResult } from './tool-result.js';

/** A plain call's answer is written as it completes; one running longer gets its headers at this age, ms (the door's answer hold). */
export const HOLD_ANSWER_MS = 1_000;
/** SSE keep-alive comment period of a response stream, ms (the SDK's `DEFAULT_SSE_KEEP_ALIVE_MS`). */
const KEEP_ALIVE_MS = 15_000;
/** The `_meta` keys the SDK lifts out of a request (the 2026-07-28 envelope) start with this. */
const RESERVED_META_PREFIX = 'io.modelcontextprotocol/';

type RequestId = string | number;

/** JSON-RPC error codes of the answers the SDK would give (its `ProtocolErrorCode`). */
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const RESOURCE_NOT_FOUND = -32002;

/** The SDK's error answer to request `id` for a handler that threw `error`. */
function errorAnswer(id: RequestId, error: unknown): string {
  const e = error as { code?: unknown; message?: unknown; data?: unknown } | null | undefined;
  const thrown = Number.isSafeInteger(e?.code) ? (e!.code as number) : INTERNAL_ERROR;
  const code = thrown === RESOURCE_NOT_FOUND ? INVALID_PARAMS : thrown; // the 2025 codec's `encodeErrorCode`
  const body = { code, message: e?.message ?? 'Internal error', ...(e?.data !== undefined && { data: e.data }) };
  return JSON.stringify({ jsonrpc: '2.0', id, error: body });
}

/** A plain `tools/call` the door serves itself: its request id and the call. */
export interface PlainCall {
  id: RequestId;
  call: ToolCall;
  /** The JSON-RPC request as sent. */
  message: unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Whether the headers are ones the SDK transport accepts for a session POST, with this protocol revision. */
function headersFit(headers: IncomingHttpHeaders, supported: readonly string[]): boolean {
  const accept = headers.accept;
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  if (headers['content-type'] !== 'application/json') return false;
  const version = headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && supported.includes(version));
}

/**
 * The plain `tools/call` that `body` (a parsed POST body of a session) is, or `undefined` when the
 * SDK transport must serve it. `supported`: the protocol revisions the session's transport accepts.
 */
export function plainCallOf(body: unknown, headers: IncomingHttpHeaders, supported: readonly string[]): PlainCall | undefined {
  if (!isPlainObject(body) || body.method !== 'tools/call' || body.jsonrpc !== '2.0') return undefined;
  const id = body.id;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  for (const key in body) if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return undefined;
  const params = body.params;
  if (!isPlainObject(params) || typeof params.name !== 'string') return undefined;
  for (const key in params) if (key !== 'name' && key !== 'arguments' && key !== '_meta') return undefined;
  const args = params.arguments;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  const meta = params._meta;
  if (meta !== undefined && !isPlainObject(meta)) return undefined;
  let deadlineMs: number | undefined;
  let workspace: string | undefined;
  if (meta !== undefined) {
    for (const key in meta) if (key === 'progressToken' || key === STREAM_META || key.startsWith(RESERVED_META_PREFIX)) return undefined;
    const deadline = meta[DEADLINE_META];
    if (deadline !== undefined && (typeof deadline !== 'number' || !Number.isInteger(deadline) || deadline <= 0)) return undefined;
    deadlineMs = deadline;
    const root = meta[WORKSPACE_META];
    if (root !== undefined && typeof root !== 'string') return undefined;
    workspace = root;
  }
  if (!headersFit(headers, supported)) return undefined;
  return { id: id as RequestId, call: { name: params.name, arguments: args, meta, deadlineMs, workspace, inputError: undefined }, message: body };
}

/** One running plain call of a session. */
interface Running {
  stop: AbortController;
  /** No answer is to be written (cancelled by the client, or its session ended). */
  dropped: boolean;
  /** Ends the response stream (headers first, when not yet sent), as the SDK does at session end. */
  end: () => void;
}

/** What a session's plain calls need. */
export interface PlainCallsDeps {
  executor: Pick<Executor, 'execute'>;
  /** The listed tools (whether a failed call's tool has its own `outputSchema`: `tool-result.ts`). */
  tools: ToolSource;
  /**
   * The SDK's validation of a `tools/call` result for `request` (what its session would answer),
   * for results not of toolwire's own shape: a tool of an MCP server's content blocks and structured result.
   */
  validate: (request: unknown, result: CallToolResult) => Promise<unknown>;
}

/** The SSE response headers of the SDK's session transport for a POST, as its Node adapter writes them (lower-case, sorted). */
function sseHeaders(sessionId: string): Record<string, string> {
  return {
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'content-type': 'text/event-stream',
    'mcp-session-id': sessionId,
    'x-accel-buffering': 'no',
  };
}

/**
 * The `tools/call` result as the SDK's result validation leaves a result of toolwire's own shape
 * (no `_meta`, one text block): `content`, `structuredContent`, `isError`, in that order.
 */
function ownShape(result: CallToolResult): Record<string, unknown> {
  return { content: result.content, structuredContent: result.structuredContent, isError: result.isError };
}

/** The running plain calls of one session. */
export class PlainCalls {
  readonly #deps: PlainCallsDeps;
  readonly #sessionId: string;
  /** Renewed every {@link RENEW_AFTER_ADDS} calls (`churn.ts`). */
  #running = new Map<RequestId, Running>();
  #adds = 0;

  constructor(sessionId: string, deps: PlainCallsDeps) {
    this.#sessionId = sessionId;
    this.#deps = deps;
  }

  /** Whether a plain call with this request id still has its stream open. */
  has(id: RequestId): boolean {
    return this.#running.has(id);
  }

  /** `notifications/cancelled` messages in `body` (a parsed POST body) stop the calls they name; no answer is written for them. */
  cancel(body: unknown): void {
    if (this.#running.size === 0) return;
    for (const m of Array.isArray(body) ? body : [body]) {
      if (!isPlainObject(m) || m.method !== 'notifications/cancelled' || !isPlainObject(m.params)) continue;
      const running = this.#running.get(m.params.requestId as RequestId);
      if (running === undefined) continue;
      running.dropped = true;
      running.stop.abort(m.params.reason ?? new Error('cancelled by the MCP client'));
    }
  }

  /** Stop every call (130) with `reason`; each answer is still written (its caller's token was revoked). */
  stopAll(reason: Error): void {
    for (const running of this.#running.values()) running.stop.abort(reason);
  }

  /** The session ended: every call stops (130) and its stream ends without an answer. */
  closeAll(): void {
    for (const running of this.#running.values()) {
      running.dropped = true;
      running.stop.abort(new Error('the MCP session closed'));
      running.end();
    }
    this.#running.clear();
  }

  /** Run `plain` for `caller` and write its answer to `res` (resolves when the answer is written or dropped). */
  async serve(plain: PlainCall, caller: CallerPrincipal, headers: IncomingHttpHeaders, res: ServerResponse): Promise<void> {
    const { id, call } = plain;
    const stop = new AbortController();
    let keepAlive: NodeJS.Timeout | undefined;
    const tick = (): void => {
      if (!res.writableEnded) res.write(': keepalive\n\n');
    };
    const flushHeaders = (): void => {
      if (res.headersSent || res.writableEnded) return;
      res.writeHead(200, sseHeaders(this.#sessionId));
      res.flushHeaders();
      keepAlive = setTimeout(() => {
        tick();
        keepAlive = setInterval(tick, KEEP_ALIVE_MS);
        keepAlive.unref();
      }, KEEP_ALIVE_MS - HOLD_ANSWER_MS);
      keepAlive.unref();
    };
    const hold = setTimeout(flushHeaders, HOLD_ANSWER_MS);
    const running: Running = {
      stop,
      dropped: false,
      end: () => {
        if (!res.headersSent) res.writeHead(200, sseHeaders(this.#sessionId));
        res.end();
      },
    };
    if (++this.#adds === RENEW_AFTER_ADDS) {
      this.#adds = 0;
      this.#running = new Map(this.#running);
    }
    this.#running.set(id, running);
    const onClose = (): void => {
      clearTimeout(hold);
      clearTimeout(keepAlive); // clears an interval too
      if (this.#running.get(id) === running) this.#running.delete(id);
      // The client went away or the connection dropped: the answer can never be delivered.
      if (!res.writableFinished) stop.abort(new Error('the response stream closed before the result'));
    };
    res.once('close', onClose);
    let message: string;
    try {
      let pending;
      try {
        pending = this.#deps.executor.execute(executeRequestOf(call, caller, stop.signal, headers));
      } catch (error) {
        // Caller misuse the executor detects (an empty tool name): invalid params, as the SDK session's
        // handler answers; at once, so framed with a length as the SDK's Node adapter frames an answer
        // complete before its first read gives up.
        const event = `event: message\ndata: ${errorAnswer(id, { code: INVALID_PARAMS, message: error instanceof Error ? error.message : String(error) })}\n\n`;
        clearTimeout(hold);
        this.#running.delete(id);
        res.writeHead(200, { ...sseHeaders(this.#sessionId), 'content-length': String(Buffer.byteLength(event)) });
        res.end(event);
        return;
      }
      const executed = await pending;
      const result = toCallToolResult(executed, () => ownsOutputSchema(this.#deps.tools, call.name));
      const foreign =
        result._meta !== undefined || (executed.outcome === 'completed' && (executed.capture.content !== undefined || executed.capture.structured !== undefined));
      message = JSON.stringify({ result: foreign ? await this.#deps.validate(plain.message, result) : ownShape(result), jsonrpc: '2.0', id });
    } catch (error) {
      message = errorAnswer(id, error);
    }
    if (running.dropped || res.writableEnded || res.destroyed) return;
    clearTimeout(hold);
    clearTimeout(keepAlive);
    this.#running.delete(id);
    if (!res.headersSent) res.writeHead(200, sseHeaders(this.#sessionId));
    res.cork(); // `end()` uncorks: the event and the stream's end (and the headers when not yet sent) in one write
    res.write(`event: message\ndata: ${message}\n\n`);
    res.end();
  }
}
