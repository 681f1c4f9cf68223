/**
 * One MCP session's server: the SDK's low-level `Server` with `tools/list` and `tools/call`
 * handlers over the executor. Capability `tools: {listChanged: true}`: the door sends
 * `notifications/tools/list_changed` whenever the router's tool set changes.
 *
 * `tools/call` reads two optional `params._meta` keys:
 * - `"toolwire/deadlineMs"` — the call's deadline, ms (positive integer; default: the tool's or the
 *   server's, 120000);
 * - `"toolwire/workspace"` — the workspace root passed to the host (string; default `""`).
 * A malformed value is a JSON-RPC error `-32602` (invalid params). An MCP `notifications/cancelled`
 * for the request aborts `extra.signal`, which stops the call (capture 130). `_meta.progressToken`
 * and `_meta["toolwire/stream"]` ask for live output while the call runs (`live-output.ts`).
 * W3C trace context: `_meta.traceparent` / `_meta.tracestate`, else the HTTP request's `traceparent` /
 * `tracestate` headers, become the call's trace context (`ExecuteRequest.traceparent`); an invalid
 * one is ignored, as W3C Trace Context asks.
 */
import type { ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Executor } from '../executor/executor.js';
import type { Logger } from '../options.js';
import { isGranted } from '../executor/gates.js';
import { traceContextOf } from './trace-context.js';
import { type CallerPrincipal, DEADLINE_META, type ToolSource, WORKSPACE_META } from './caller.js';
import { OUTPUT_META, STREAM_META, liveOutput, type Notification } from './live-output.js';
import { toCallToolResult, toMcpTools } from './tool-result.js';

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
}

function principalOf(authInfo: AuthInfo | undefined, fallback: CallerPrincipal): CallerPrincipal {
  const p = authInfo?.extra?.principal as CallerPrincipal | undefined;
  return p ?? fallback;
}

/** Create the SDK `Server` of one MCP session (not yet connected to a transport). */
export function createMcpServer(deps: McpServerDeps): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: true } } });

  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => {
    const caller = principalOf(extra.authInfo, deps.caller);
    return { tools: toMcpTools(deps.tools.tools().filter((t) => isGranted(caller.grant, t.name))) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const caller = principalOf(extra.authInfo, deps.caller);
    const meta = request.params._meta;
    const deadlineMs = meta?.[DEADLINE_META];
    if (deadlineMs !== undefined && (typeof deadlineMs !== 'number' || !Number.isInteger(deadlineMs) || deadlineMs <= 0)) {
      throw new McpError(ErrorCode.InvalidParams, `_meta["${DEADLINE_META}"] must be a positive integer (ms)`);
    }
    const workspace = meta?.[WORKSPACE_META];
    if (workspace !== undefined && typeof workspace !== 'string') {
      throw new McpError(ErrorCode.InvalidParams, `_meta["${WORKSPACE_META}"] must be a string`);
    }
    const live = liveOutput({
      progressToken: meta?.progressToken,
      stream: meta?.[STREAM_META] === true,
      progressIntervalMs: deps.progressIntervalMs,
      send: (notification: Notification) => extra.sendNotification(notification),
      response: extra.authInfo?.extra?.response as ServerResponse | undefined,
      logger: deps.logger,
    });
    const traced = traceContextOf(meta, extra.requestInfo?.headers);
    let pending;
    try {
      pending = deps.executor.execute({
        name: request.params.name,
        input: request.params.arguments ?? {},
        agent: caller.name,
        role: caller.role,
        ...(caller.grant !== undefined && { grant: caller.grant }),
        ...(workspace !== undefined && { workspace }),
        ...(deadlineMs !== undefined && { deadlineMs }),
        signal: extra.signal,
        ...(live !== undefined && { onOutput: live.listener, onProgress: live.onProgress }),
        ...traced,
      });
    } catch (error) {
      live?.close();
      // Caller misuse detected by the executor (e.g. an empty tool name).
      throw new McpError(ErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
    }
    try {
      const result = toCallToolResult(await pending);
      if (live !== undefined && meta?.[STREAM_META] === true) result._meta = { ...result._meta, [OUTPUT_META]: { chunks: live.chunks } };
      return result;
    } finally {
      live?.close();
    }
  });

  return server;
}
