/**
 * The MCP SDK, loaded on demand. The SDK (`@modelcontextprotocol/sdk/server`, with zod) grows the
 * V8 heap; a server whose MCP door is never used should not carry it (a bigger heap makes every GC
 * of the call path cost more — bench/README.md item 15). The door calls {@link loadMcpSdk}
 * when a request first needs a session; every other module of `@toolwire/server` imports SDK types
 * only (`import type`, erased at run time).
 */
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { createMcpServer } from './mcp-server.js';

/** The SDK values the door uses. */
export interface McpSdk {
  /** `mcp-server.ts` (the SDK `Server` with toolwire's handlers). */
  createMcpServer: typeof createMcpServer;
  StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
  /** The protocol versions the SDK transport accepts in `Mcp-Protocol-Version`. */
  protocolVersions: readonly string[];
}

/** Import the SDK modules (not cached here: see {@link sdkLoader}). */
async function importMcpSdk(): Promise<McpSdk> {
  const [server, transport, types] = await Promise.all([
    import('./mcp-server.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    createMcpServer: server.createMcpServer,
    StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport,
    protocolVersions: types.SUPPORTED_PROTOCOL_VERSIONS,
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
