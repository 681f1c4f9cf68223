/**
 * The `tools/call` requests of one MCP connection (DESIGN §7 "MCP servers"), sent on the connection's
 * transport directly instead of through the SDK client's `request()`. Per call `request()` makes an
 * `AbortSignal` and its listener, a timeout timer, copies of the params, and validates the answer
 * with zod twice (as a JSON-RPC response, then as a `CallToolResult`) — more than the rest of the
 * host's work for a call (bench/README.md, issue 14). Here a call is one entry in a map: its abort is
 * the call layer's (which owns the deadline), and a text-only result (with or without
 * `structuredContent`) is checked field by field (the SDK's `CallToolResultSchema` checks every other one).
 *
 * Requests carry the ids `tw-1`, `tw-2`… (MCP allows a string or an integer; the SDK client's own
 * requests use integers), and their progress tokens are the same strings. The responses to them and
 * the `notifications/progress` for them are taken off the transport before the SDK client sees the
 * message; everything else (requests from the server, list changes, the SDK's own answers) goes on to
 * the SDK.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpClientSdk } from './sdk.js';

/** One call's side of the exchange. At most one of `done`, `failed` and `gone` runs, once. */
export interface ToolCallHandler {
  /** The server answered with a valid result. */
  done(result: CallToolResult): void;
  /** The server answered with a JSON-RPC error, a result that is not a `CallToolResult`, or the request could not be sent. */
  failed(reason: string): void;
  /** A `notifications/progress` for this call: the server's message, else `progress/total`, else `progress`. */
  progress(message: string): void;
  /** The connection ended ({@link ToolCalls.endAll}) with the call in flight. */
  gone(reason: string): void;
}

const ID_PREFIX = 'tw-';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `result` as a `CallToolResult` when it is one whose content blocks are all text (what most tools
 * answer), with or without an object `structuredContent`: the fields the capture reads are checked
 * here. With `structuredContent` the blocks are passed on as they are (the capture keeps them), so
 * each must be exactly `{type, text}` — what the schema would give back for it. Anything else goes
 * through the SDK's `CallToolResultSchema` (images, resources, annotations, `_meta` on a block; it
 * also drops unknown keys of the blocks that are passed on). `undefined` → use the schema.
 */
function textResult(result: Record<string, unknown>): CallToolResult | undefined {
  const { content, isError, structuredContent } = result;
  if (!Array.isArray(content) || (isError !== undefined && typeof isError !== 'boolean')) return undefined;
  const kept = structuredContent !== undefined;
  if (kept && !isObject(structuredContent)) return undefined;
  for (const block of content as unknown[]) {
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string' || block.annotations !== undefined) return undefined;
    if (kept && !onlyTypeAndText(block)) return undefined;
  }
  return result as CallToolResult;
}

/** True when `block` (which has `type` and `text`) has no other key. */
function onlyTypeAndText(block: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in block) if (Object.hasOwn(block, key)) keys++;
  return keys === 2;
}

/** The `tools/call` requests in flight on one connection. Construct it right after the SDK client connected. */
export class ToolCalls {
  readonly #transport: Transport;
  readonly #resultSchema: McpClientSdk['CallToolResultSchema'];
  readonly #pending = new Map<string, ToolCallHandler>();
  /** Told first when a request cannot be sent (the source may take the connection down: its calls are then `gone`). */
  readonly #onSendError: ((error: unknown) => void) | undefined;
  #next = 0;

  /**
   * Takes this connection's answers to its calls off `transport` (whose `onmessage` the SDK client
   * set when it connected); a result other than text blocks is checked with `resultSchema` (the SDK's
   * `CallToolResultSchema`, `sdk.ts`).
   */
  constructor(transport: Transport, resultSchema: McpClientSdk['CallToolResultSchema'], onSendError?: (error: unknown) => void) {
    this.#transport = transport;
    this.#resultSchema = resultSchema;
    this.#onSendError = onSendError;
    const client = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (!this.#take(message)) client?.(message, extra);
    };
  }

  /** Calls in flight. */
  get size(): number {
    return this.#pending.size;
  }

  /**
   * Send `tools/call` for tool `name` (its name on the server) with `args` unchanged; returns the
   * request id for {@link cancel}. A send that fails calls `handler.failed` later, never now.
   */
  call(name: string, args: unknown, handler: ToolCallHandler): string {
    const id = `${ID_PREFIX}${++this.#next}`;
    this.#pending.set(id, handler);
    const request = { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { progressToken: id } } } as JSONRPCMessage;
    this.#transport.send(request).catch((error: unknown) => {
      this.#onSendError?.(error);
      this.#fail(id, error instanceof Error ? error.message : String(error));
    });
    return id;
  }

  /**
   * The response stream of call `id` ended (a Streamable HTTP server, `http-watch.ts`) and no answer
   * will follow on it: if the call is still waiting once the turn's messages are handled (the answer
   * the stream carried reaches {@link #take} before), it is `gone` with `reason`.
   */
  unanswered(id: string, reason: string): void {
    setImmediate(() => {
      const handler = this.#pending.get(id);
      if (handler === undefined) return;
      this.#pending.delete(id);
      handler.gone(reason);
    });
  }

  /** The call was stopped: forget it (a later answer is dropped) and send `notifications/cancelled`. Unknown ids are ignored. */
  cancel(id: string, reason: string): void {
    if (!this.#pending.delete(id)) return;
    this.#transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }).catch(() => {}); // a dead server: its calls settle through its death
  }

  /** The connection ended: every call in flight is told `reason` (`gone`), and forgotten. */
  endAll(reason: string): void {
    const handlers = [...this.#pending.values()];
    this.#pending.clear();
    for (const handler of handlers) handler.gone(reason);
  }

  #fail(id: string, reason: string): void {
    const handler = this.#pending.get(id);
    if (handler === undefined) return;
    this.#pending.delete(id);
    handler.failed(reason);
  }

  /** True when `message` belongs to a call of ours (handled, or dropped when the call is gone). */
  #take(message: JSONRPCMessage): boolean {
    const m = message as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };
    if (typeof m.id === 'string') {
      if (!m.id.startsWith(ID_PREFIX) || m.method !== undefined) return false; // a request from the server
      const handler = this.#pending.get(m.id);
      if (handler === undefined) return true; // cancelled, or never ours
      this.#pending.delete(m.id);
      if (m.error !== undefined) {
        const e = m.error as { code?: unknown; message?: unknown };
        handler.failed(`MCP error ${String(e.code)}: ${String(e.message)}`);
      } else if (isObject(m.result)) {
        const text = textResult(m.result);
        if (text !== undefined) handler.done(text);
        else {
          const parsed = this.#resultSchema.safeParse(m.result);
          if (parsed.success) handler.done(parsed.data);
          else handler.failed(`its result is not a CallToolResult: ${parsed.error.message.slice(0, 500)}`);
        }
      } else handler.failed('its answer has no result');
      return true;
    }
    if (m.method === 'notifications/progress' && isObject(m.params)) {
      const { progressToken: token, progress, total, message: text } = m.params;
      if (typeof token !== 'string' || !token.startsWith(ID_PREFIX)) return false;
      const handler = this.#pending.get(token);
      if (handler === undefined || typeof progress !== 'number') return true;
      handler.progress(typeof text === 'string' ? text : typeof total === 'number' ? `${progress}/${total}` : String(progress));
      return true;
    }
    return false;
  }
}
