/**
 * The MCP SDK's client side (`@modelcontextprotocol/sdk`, with zod), loaded on demand. Importing it
 * grows a process's V8 heap by ~10 MB and its private memory by ~18 MiB (bench/README.md, session 15);
 * a tool host that bridges no MCP server, or a program that imports `@toolwire/client` for
 * `ToolHost` alone, should not carry it. An MCP source loads it when it first connects (its
 * transports and calls run only after that); every other module imports SDK types only
 * (`import type`, erased at run time). The server's door does the same with the server SDK
 * (`@toolwire/server` `mcp/sdk.ts`).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type {
  CallToolResultSchema,
  ErrorCode,
  JSONRPCMessageSchema,
  McpError,
  PaginatedResultSchema,
  ToolListChangedNotificationSchema,
  ToolSchema,
} from '@modelcontextprotocol/sdk/types.js';

/** The SDK values the MCP source uses. */
export interface McpClientSdk {
  Client: typeof Client;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  /** What its send throws for an HTTP error status (`code`: the status). */
  StreamableHTTPError: typeof StreamableHTTPError;
  /** One message as a line of the stdio transport. */
  serializeMessage: typeof serializeMessage;
  JSONRPCMessageSchema: typeof JSONRPCMessageSchema;
  /** A `tools/list` page before its tools are checked, each on its own (`ToolSchema`). */
  PaginatedResultSchema: typeof PaginatedResultSchema;
  ToolSchema: typeof ToolSchema;
  CallToolResultSchema: typeof CallToolResultSchema;
  ToolListChangedNotificationSchema: typeof ToolListChangedNotificationSchema;
  /** What a request rejects with for a JSON-RPC error, and its codes (`RequestTimeout`: no answer within its timeout). */
  McpError: typeof McpError;
  ErrorCode: typeof ErrorCode;
}

async function importSdk(): Promise<McpClientSdk> {
  const [client, http, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    serializeMessage: stdio.serializeMessage,
    JSONRPCMessageSchema: types.JSONRPCMessageSchema,
    PaginatedResultSchema: types.PaginatedResultSchema,
    ToolSchema: types.ToolSchema,
    CallToolResultSchema: types.CallToolResultSchema,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    McpError: types.McpError,
    ErrorCode: types.ErrorCode,
  };
}

let loading: Promise<McpClientSdk> | undefined;

/**
 * The SDK, imported once: callers share one promise; a failed import is forgotten, so the next call
 * tries again. Rejects with the import's error.
 */
export function loadMcpClientSdk(): Promise<McpClientSdk> {
  loading ??= importSdk().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
