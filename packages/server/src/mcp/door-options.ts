/**
 * What the MCP door (`door.ts`) is built from: its options (`ToolwireServerOptions.mcp…`), what it
 * needs from the server, and the defaults of its limits.
 */
import type { Socket } from 'node:net';
import type { AuthLimiter } from '../auth/limiter.js';
import type { Logger } from '../options.js';
import type { CallerPrincipal, ToolSource } from './caller.js';
import type { McpServerDeps } from './mcp-server.js';

/** Authenticates callers (the server's `TokenTable` fits). */
export interface CallerAuthenticator {
  /** @returns the caller, or `undefined` for a missing, malformed, unknown or non-caller token. */
  authenticate(authorization: string | undefined, role: 'caller'): CallerPrincipal | undefined;
}

/** What the door reads (`ToolwireServerOptions.mcpMaxSessions`, `mcpMaxSessionsPerCaller`, `mcpMaxListensPerCaller`, `mcpMaxInputDepth`, `mcpSessionIdleMs`, `mcpMaxRequestBodyBytes`, `allowedOrigins`, `logger`). */
export interface McpDoorOptions {
  /** Open MCP sessions at most. At the limit the least recently active idle session is evicted; if none is idle → HTTP 503. */
  maxSessions: number;
  /** Open MCP sessions of one caller at most; at the limit that caller's least recently active idle session is evicted; if none is idle → HTTP 503. Default 64. */
  maxSessionsPerCaller?: number;
  /** Open 2026-07-28 `subscriptions/listen` streams of one caller at most; more → HTTP 503 naming the limit. Default 16. */
  maxListensPerCaller?: number;
  /** A session with no POST or DELETE open for this long expires (its calls stop → 130), ms. Default 900000 (15 min). */
  sessionIdleMs?: number;
  /** Levels of nesting a `tools/call`'s `arguments` may have (the object itself is level 1); deeper → HTTP 400, JSON-RPC `-32602`. Default 1000. */
  maxInputDepth?: number;
  /** Largest POST body, bytes; more → HTTP 413. */
  maxRequestBodyBytes: number;
  /** Origins allowed to send requests with an `Origin` header (lower-case); `[]`: browsers refused. */
  allowedOrigins: readonly string[];
  /** A call with `_meta.progressToken` gets `notifications/progress` at least this often, ms. */
  progressIntervalMs: number;
  logger: Logger;
}

/** What the door needs. */
export interface McpDoorDeps {
  executor: McpServerDeps['executor'];
  /** The router: `tools()` and its `toolsChanged` event. */
  tools: ToolSource;
  auth: CallerAuthenticator;
  options: McpDoorOptions;
  /** Failed-authentication limiter (shared with the host endpoint). Default: none. */
  limiter?: AuthLimiter;
  /** Told about the socket of every request with a valid caller token (it leaves the pre-auth accounting). Default: nothing. */
  authenticated?: (socket: Socket) => void;
}

/** Default {@link McpDoorOptions.maxSessionsPerCaller}. */
export const DEFAULT_MAX_SESSIONS_PER_CALLER = 64;
/** `mcpMaxListensPerCaller` when not given. */
export const DEFAULT_MAX_LISTENS_PER_CALLER = 16;
/** Default {@link McpDoorOptions.sessionIdleMs}: 15 min. */
export const DEFAULT_SESSION_IDLE_MS = 15 * 60_000;
