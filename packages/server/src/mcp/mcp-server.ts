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
 * for the request aborts `extra.signal`, which stops the call (capture 130).
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Executor } from '../executor/executor.js';
import { isGranted } from '../executor/gates.js';
import { type CallerPrincipal, DEADLINE_META, type ToolSource, WORKSPACE_META } from './caller.js';
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
      });
    } catch (error) {
      // Caller misuse detected by the executor (e.g. an empty tool name).
      throw new McpError(ErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
    }
    return toCallToolResult(await pending);
  });

  return server;
}
