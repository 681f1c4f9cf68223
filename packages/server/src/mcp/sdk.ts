/**
 * The MCP SDK (v2: `@modelcontextprotocol/server` and its Node adapter `@modelcontextprotocol/node`),
 * loaded on demand. The SDK (with zod) grows the V8 heap; a server whose MCP door is never used
 * should not carry it (a bigger heap makes every GC of the call path cost more — bench/README.md
 * item 15). The door calls {@link loadMcpSdk} when a request first needs the SDK; every other module
 * of `@toolwire/server` imports SDK types only (`import type`, erased at run time).
 */
import type { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import type { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import type { createMcpServer, validateToolResult } from './mcp-server.js';

/** The SDK values the door uses. */
export interface McpSdk {
  /** `mcp-server.ts` (the SDK `Server` with toolwire's handlers). */
  createMcpServer: typeof createMcpServer;
  /** A `tools/call` result as a session's SDK `Server` would answer it (`mcp-server.ts`). */
  validateToolResult: typeof validateToolResult;
  /** A 2025-era session's transport (stateful Streamable HTTP on `node:http`). */
  NodeStreamableHTTPServerTransport: typeof NodeStreamableHTTPServerTransport;
  /** The 2026-07-28 (per-request, stateless) handler, and its `node:http` face. */
  createMcpHandler: typeof createMcpHandler;
  toNodeHandler: typeof toNodeHandler;
  /** Which era a request without a session belongs to. */
  isLegacyRequest: typeof isLegacyRequest;
  toWebRequest: typeof toWebRequest;
  /** The protocol revisions a session's transport accepts in `MCP-Protocol-Version`. */
  supportedProtocolVersions: readonly string[];
}

/** Import the SDK modules (not cached here: see {@link sdkLoader}). */
async function importMcpSdk(): Promise<McpSdk> {
  const [server, sdk, node] = await Promise.all([import('./mcp-server.js'), import('@modelcontextprotocol/server'), import('@modelcontextprotocol/node')]);
  return {
    createMcpServer: server.createMcpServer,
    validateToolResult: server.validateToolResult,
    NodeStreamableHTTPServerTransport: node.NodeStreamableHTTPServerTransport,
    createMcpHandler: sdk.createMcpHandler,
    toNodeHandler: node.toNodeHandler,
    isLegacyRequest: sdk.isLegacyRequest,
    toWebRequest: node.toWebRequest,
    supportedProtocolVersions: sdk.SUPPORTED_PROTOCOL_VERSIONS,
  };
}

/**
 * A loader that imports once: callers share one promise (concurrent first requests wait for the
 * same import); a failed import is forgotten, so the next call tries again.
 */
export function sdkLoader(importSdk: () => Promise<McpSdk> = importMcpSdk): () => Promise<McpSdk> {
  let loading: Promise<McpSdk> | undefined;
  return () => {
    loading ??= importSdk().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

/** The process's SDK loader (Node caches the modules; this caches the promise). */
export const loadMcpSdk: () => Promise<McpSdk> = sdkLoader();
