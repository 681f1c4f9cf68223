/**
 * The caller side of the server's MCP door, for `toolwire tools` and `toolwire call`: URL
 * normalisation, an SDK `Client` over Streamable HTTP with a bearer token, and the mapping of
 * failures to CLI exit statuses.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ExitCode } from '@toolwire/protocol';
import pTimeout from 'p-timeout';
import { VERSION } from '../version.js';

/**
 * The MCP door URL for `server`: `ws://h:p[/…]` → `http://h:p/mcp` (`wss` → `https`);
 * `http(s)://h:p` or `http(s)://h:p/` → `…/mcp`; any other http(s) path is kept.
 *
 * @throws TypeError for anything that is not a ws/wss/http/https URL
 */
export function mcpUrl(server: string): URL {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(server)}`);
  }
  if (url.protocol === 'ws:' || url.protocol === 'wss:') {
    url = new URL(`${url.protocol === 'wss:' ? 'https:' : 'http:'}//${url.host}/mcp`);
  } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`not a ws://, wss://, http:// or https:// URL: ${JSON.stringify(server)}`);
  } else if (url.pathname === '/' || url.pathname === '') {
    url.pathname = '/mcp';
  }
  return url;
}

/**
 * The Streamable HTTP transport, remembering notifications in flight so a `notifications/cancelled`
 * sent on Ctrl-C reaches the server before the transport is closed.
 */
class FlushingTransport extends StreamableHTTPClientTransport {
  readonly #notifications = new Set<Promise<void>>();

  override send(message: JSONRPCMessage | JSONRPCMessage[], options?: Parameters<StreamableHTTPClientTransport['send']>[1]): Promise<void> {
    const sent = super.send(message, options);
    if (!Array.isArray(message) && 'method' in message && !('id' in message)) {
      const tracked: Promise<void> = sent.catch(() => {}).finally(() => this.#notifications.delete(tracked));
      this.#notifications.add(tracked);
    }
    return sent;
  }

  /** Wait (at most `ms`) for notifications still being posted. */
  async flush(ms: number): Promise<void> {
    await pTimeout(Promise.all(this.#notifications), { milliseconds: ms, message: false });
  }
}

/** A connected MCP client and a way to close it promptly. */
export interface McpSession {
  client: Client;
  /** Let pending notifications (at most `flushMs`) go out, then close client and transport. */
  close(flushMs?: number): Promise<void>;
}

/**
 * Connect to the MCP door at `url` with `Authorization: Bearer <token>`. Rejects like the SDK
 * does (see {@link mcpFailure} for the mapping to exit statuses).
 */
export async function connectMcp(url: URL, token: string, signal?: AbortSignal): Promise<McpSession> {
  const transport = new FlushingTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'toolwire-cli', version: VERSION });
  client.onerror = () => {}; // errors of the background SSE stream; request failures reject their request
  const close = async (flushMs = 0): Promise<void> => {
    if (flushMs > 0) await transport.flush(flushMs);
    await client.close().catch(() => {});
  };
  try {
    await client.connect(transport, signal ? { signal } : undefined);
  } catch (error) {
    await close();
    throw error;
  }
  return { client, close };
}

/** The most telling reason in a fetch error's `cause`: an errno code (ECONNREFUSED…) or its message. */
function causeOf(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } } | undefined)?.cause;
  return cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message;
}

/**
 * The exit status and stderr line for a failed MCP exchange:
 * - HTTP 401/403 or an SDK `UnauthorizedError` → 77 (`NO_PERM`)
 * - connection refused / DNS / reset, or any other HTTP error status → 69 (`UNAVAILABLE`),
 *   `toolwire: cannot reach server <url>: …`
 * - the client's request timeout → 124 (`TIMEOUT`)
 * - any other JSON-RPC error → 69, `toolwire: server error: …`
 * - anything else → 70 (`SOFTWARE`)
 */
export function mcpFailure(error: unknown, url: URL, timeoutMs?: number): { code: number; message: string } {
  if (error instanceof UnauthorizedError) return { code: ExitCode.NO_PERM, message: `toolwire: token refused by ${url.href}\n` };
  if (error instanceof StreamableHTTPError) {
    if (error.code === 401 || error.code === 403) {
      return { code: ExitCode.NO_PERM, message: `toolwire: token refused by ${url.href} (HTTP ${error.code})\n` };
    }
    return { code: ExitCode.UNAVAILABLE, message: `toolwire: cannot reach server ${url.href}: ${error.message}\n` };
  }
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) {
      return { code: ExitCode.TIMEOUT, message: `toolwire: no answer from ${url.href} within ${timeoutMs ?? '?'} ms\n` };
    }
    return { code: ExitCode.UNAVAILABLE, message: `toolwire: server error: ${error.message}\n` };
  }
  const cause = causeOf(error);
  if (error instanceof TypeError && (cause !== undefined || error.message === 'fetch failed')) {
    return { code: ExitCode.UNAVAILABLE, message: `toolwire: cannot reach server ${url.href}: ${cause ?? error.message}\n` };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: ExitCode.SOFTWARE, message: `toolwire: ${message}\n` };
}
