/**
 * One MCP session's server: the SDK's low-level `Server` with `tools/list` and `tools/call`
 * handlers over the executor. Capability `tools: {listChanged: true}`: the door sends
 * `notifications/tools/list_changed` whenever the router's tool set changes.
 *
 * `tools/call` reads two optional `params._meta` keys:
 * - `"toolwire/deadlineMs"` — the call's deadline, ms (positive integer; default: the tool's or the
 *   server's, 120000);
 * - `"toolwire/workspace"` — the workspace root passed to the host (string; default `""`).
 * A malformed value is a JSON-RPC error `-32602` (invalid params). The call stops (capture 130) when
 * an MCP `notifications/cancelled` names its request id (any number or string), when its session
 * closes, and when the HTTP response its answer is due on closes first (`callSignal`).
 * `_meta.progressToken` and `_meta["toolwire/stream"]` ask for live output while the call runs
 * (`live-output.ts`). Arguments the door found unsafe in the raw body (`raw-body.ts`) complete 65.
 * W3C trace context: `_meta.traceparent` / `_meta.tracestate`, else the HTTP request's `traceparent` /
 * `tracestate` headers, become the call's trace context (`ExecuteRequest.traceparent`); an invalid
 * one is ignored, as W3C Trace Context asks.
 */
import type { ServerResponse } from 'node:http';
import { type AuthInfo, type CallToolResult, ProtocolError, ProtocolErrorCode, Server, type ServerContext } from '@modelcontextprotocol/server';
import type { Executor } from '../executor/executor.js';
import type { Logger } from '../options.js';
import { isGranted } from '../executor/gates.js';
import { type CallerPrincipal, DEADLINE_META, type RequestState, type ToolCall, type ToolSource, WORKSPACE_META, executeRequestOf } from './caller.js';
import { OUTPUT_META, STREAM_META, liveOutput, type Notification } from './live-output.js';
import { ownsOutputSchema, toCallToolResult, toMcpTools } from './tool-result.js';

export { DEADLINE_META, WORKSPACE_META, type CallerPrincipal, type ToolSource, authInfoOf } from './caller.js';

/** `serverInfo` in the MCP `initialize` result. */
export const SERVER_INFO = { name: 'toolwire', version: '0.1.0' } as const;

/** What one session's server needs. */
export interface McpServerDeps {
  executor: Pick<Executor, 'execute'>;
  tools: ToolSource;
  /** The caller who opened the session; used when a request carries no fresher principal. */
  caller: CallerPrincipal;
  /** `notifications/progress` at least this often while a call with a progress token runs, ms. */
  progressIntervalMs: number;
  logger: Logger;
  /** The session's stop: aborted, it stops the session's calls (130), whose answers are still written. */
  stop?: AbortSignal;
}

function principalOf(authInfo: AuthInfo | undefined, fallback: CallerPrincipal): CallerPrincipal {
  const p = authInfo?.extra?.principal as CallerPrincipal | undefined;
  return p ?? fallback;
}

/** What the door knows of the HTTP request a handler serves (`authInfo.extra.request`, `caller.ts`). */
function requestStateOf(authInfo: AuthInfo | undefined): RequestState | undefined {
  return authInfo?.extra?.request as RequestState | undefined;
}

/**
 * A signal that aborts when `signal` does (`notifications/cancelled`, the session closed), when the
 * session's `stop` does (its caller token was revoked), or when the HTTP response the call's answer
 * is to be written to closes before it was finished (the client went away or the connection dropped:
 * without resumability the answer can never be delivered). `release` forgets the listeners.
 */
function callSignal(signal: AbortSignal, response: ServerResponse | undefined, sessionStop: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
  if (response === undefined && sessionStop === undefined) return { signal, release: () => {} };
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(signal.reason);
  const onStop = (): void => stop.abort(sessionStop!.reason);
  const onClose = (): void => {
    if (!response!.writableFinished) stop.abort(new Error('the response stream closed before the result'));
  };
  if (signal.aborted) onAbort();
  else if (sessionStop?.aborted) onStop();
  else if (response !== undefined && (response.destroyed || response.closed)) onClose();
  signal.addEventListener('abort', onAbort, { once: true });
  sessionStop?.addEventListener('abort', onStop, { once: true });
  response?.once('close', onClose);
  return {
    signal: stop.signal,
    release: () => {
      signal.removeEventListener('abort', onAbort);
      sessionStop?.removeEventListener('abort', onStop);
      response?.off('close', onClose);
    },
  };
}

/** Create the SDK `Server` of one MCP session (not yet connected to a transport). */
/**
 * The server's `instructions` (MCP `initialize`): how to read toolwire's results, in three sentences.
 * The exit codes are those of `ExitCode` (DESIGN §4).
 */
export const INSTRUCTIONS =
  'Each tool runs on a remote machine; its result text starts with "Exit code: N", then the tool\'s stdout, then its stderr after "--- stderr ---" (structuredContent has stdout, stderr and exitCode exactly). ' +
  'Exit code 0 is success and other codes are the tool\'s own, except those toolwire sets with a "toolwire: <reason>" line on stderr: 65 input refused, 69 host not connected (retry later), 70 host failed internally, 75 overloaded (retry later), 76 host protocol fault, 124 deadline exceeded, 126 cannot execute, 127 no such tool, 130 stopped. ' +
  'Tools are listed by name; a name qualified as host__tool says which machine runs it.';

export function createMcpServer(deps: McpServerDeps): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS });

  server.setRequestHandler('tools/list', (_request, ctx: ServerContext) => {
    const caller = principalOf(ctx.http?.authInfo, deps.caller);
    return { tools: toMcpTools(deps.tools.tools().filter((t) => isGranted(caller.grant, t.name))) };
  });

  server.setRequestHandler('tools/call', async (request, ctx: ServerContext) => {
    const authInfo = ctx.http?.authInfo;
    const caller = principalOf(authInfo, deps.caller);
    const http = requestStateOf(authInfo);
    const meta = request.params._meta;
    const deadlineMs = meta?.[DEADLINE_META];
    if (deadlineMs !== undefined && (typeof deadlineMs !== 'number' || !Number.isInteger(deadlineMs) || deadlineMs <= 0)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `_meta["${DEADLINE_META}"] must be a positive integer (ms)`);
    }
    const workspace = meta?.[WORKSPACE_META];
    if (workspace !== undefined && typeof workspace !== 'string') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `_meta["${WORKSPACE_META}"] must be a string`);
    }
    const live = liveOutput({
      progressToken: meta?.progressToken,
      stream: meta?.[STREAM_META] === true,
      progressIntervalMs: deps.progressIntervalMs,
      send: (notification: Notification) => ctx.mcpReq.notify(notification),
      response: http?.response,
      logger: deps.logger,
    });
    const stop = callSignal(ctx.mcpReq.signal, http?.response, deps.stop);
    const call: ToolCall = {
      name: request.params.name,
      arguments: request.params.arguments,
      meta,
      deadlineMs,
      workspace,
      inputError: http?.inputErrors?.get(ctx.mcpReq.id),
    };
    let pending;
    try {
      pending = deps.executor.execute(executeRequestOf(call, caller, stop.signal, http?.headers, live && { onOutput: live.listener, onProgress: live.onProgress }));
    } catch (error) {
      live?.close();
      stop.release();
      // Caller misuse detected by the executor (e.g. an empty tool name).
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
    }
    try {
      const result = toCallToolResult(await pending, () => ownsOutputSchema(deps.tools, call.name));
      if (live !== undefined && meta?.[STREAM_META] === true) result._meta = { ...result._meta, [OUTPUT_META]: { chunks: live.chunks } };
      return result;
    } finally {
      live?.close();
      stop.release();
    }
  });

  return server;
}

/** What the SDK's `Server` validates a `tools/call` result with (its `_wrapHandler`, not in its public types). */
interface ToolCallWrapper {
  _wrapHandler(method: 'tools/call', handler: () => CallToolResult): (request: unknown, ctx: { mcpReq: { requestState: () => undefined } }) => Promise<unknown>;
}

/**
 * `result` as the SDK session `server` would answer it to `request` (a `tools/call` message): its
 * result validation (unknown keys of content blocks dropped, keys in its order; a result it refuses
 * throws its `ProtocolError`). For the door's own answers (`plain-call.ts`) to results it does not shape itself.
 */
export function validateToolResult(server: Server, request: unknown, result: CallToolResult): Promise<unknown> {
  const wrapped = (server as unknown as ToolCallWrapper)._wrapHandler('tools/call', () => result);
  return wrapped(request, { mcpReq: { requestState: () => undefined } });
}
