/**
 * The MCP door: MCP Streamable HTTP at `/mcp` on the server's http server, so agents call tools
 * through any MCP client. Stateful: an `initialize` POST opens a session (one SDK `Server` + one
 * `StreamableHTTPServerTransport`, session id a random UUID in `Mcp-Session-Id`); a DELETE, a
 * transport close or {@link McpDoor.close} ends it. A POST of a session carrying one request that
 * asks for no progress and no output (no `_meta.progressToken`, no `_meta["toolwire/stream"]`) is
 * answered with one JSON body written when the answer is ready (`json-answer.ts`); other POSTs get
 * the SDK transport's SSE stream (progress and output notifications go on it). Server notifications
 * (`tools/list_changed`) use the GET stream.
 *
 * Every request must carry `Authorization: Bearer <caller token>`; otherwise HTTP 401 with a JSON-RPC
 * error (`-32000`, "Unauthorized: a caller bearer token is required …" and how `toolwire token add
 * caller` makes one) and `WWW-Authenticate: Bearer` with an `error_description` and the
 * protected-resource metadata URL (`endpoint/http-front.ts`); nothing about which tokens exist. The caller's
 * name is the agent id and its grant the grant; a session is bound to the caller that opened it (a
 * request for another caller's session gets 404 "Session not found", as an unknown session does).
 *
 * Before authentication: a request with an `Origin` header not in `allowedOrigins` (a browser) →
 * HTTP 403. The token is checked next; a valid one is accepted even while its address is throttled.
 * A failed authentication is counted by the limiter and logged at warn (remote address, never the
 * token); from an address that failed too often it gets HTTP 429 with `Retry-After` and the message
 * `too many failed authentications from this address; retry after N s` instead of 401.
 *
 * Limits: open sessions `maxSessions` (default 1024): at the limit a new session evicts the least
 * recently active session with no request open (clients that never send DELETE do not pile up),
 * and when every session is busy the answer is HTTP 503; POST body `maxRequestBodyBytes` (default
 * 4 MiB, more → HTTP 413, by the SDK transport).
 *
 * The MCP SDK is loaded when the first authenticated request needs a new session (`sdk.ts`), not
 * when this module is imported; if that import fails, the request gets HTTP 500 and the next one
 * tries again.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type AuthLimiter, retryAfterSeconds, tooManyFailures } from '../auth/limiter.js';
import { originAllowed } from '../auth/origin.js';
import { unauthorized } from '../endpoint/http-front.js';
import type { Logger } from '../options.js';
import { type CallerPrincipal, type ToolSource, authInfoOf } from './caller.js';
import { DoorTransport, plainPostHeaders, plainRequest, readPostBody } from './json-answer.js';
import type { McpServerDeps } from './mcp-server.js';
import { type McpSdk, loadMcpSdk } from './sdk.js';

/** Authenticates callers (the server's `TokenTable` fits). */
export interface CallerAuthenticator {
  /** @returns the caller, or `undefined` for a missing, malformed, unknown or non-caller token. */
  authenticate(authorization: string | undefined, role: 'caller'): CallerPrincipal | undefined;
}

/** What the door reads (`ToolwireServerOptions.mcpMaxSessions`, `mcpMaxRequestBodyBytes`, `allowedOrigins`, `logger`). */
export interface McpDoorOptions {
  /** Open MCP sessions at most. At the limit the least recently active idle session is evicted; if none is idle → HTTP 503. */
  maxSessions: number;
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

interface Session {
  caller: string;
  /** The principal that opened the session (revoked when its token is removed or rotated). */
  principal: CallerPrincipal;
  server: Server;
  transport: DoorTransport;
  /** `Mcp-Protocol-Version` values the SDK accepts. */
  protocolVersions: readonly string[];
  /** HTTP requests of this session still open (a GET notification stream stays open). */
  open: number;
  /** When a request of this session last started or ended, ms since the epoch. */
  lastActive: number;
}

/** Answer with a JSON-RPC error object and no request id. */
function replyError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The MCP Streamable HTTP endpoint. Hand it every request whose path is `/mcp`. */
export class McpDoor {
  readonly #deps: McpDoorDeps;
  readonly #options: McpDoorOptions;
  readonly #sessions = new Map<string, Session>();
  #closed = false;
  readonly #onToolsChanged = (): void => this.#broadcastToolsChanged();

  constructor(deps: McpDoorDeps) {
    this.#deps = deps;
    this.#options = deps.options;
    deps.tools.on('toolsChanged', this.#onToolsChanged);
  }

  /** Open (initialized) MCP sessions. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** Serve one HTTP request to `/mcp` (POST, GET for the SSE stream, DELETE). Never rejects. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.#handle(req, res);
    } catch (error) {
      this.#options.logger.error({ err: error }, 'MCP request failed');
      if (!res.headersSent) replyError(res, 500, -32603, 'Internal server error');
      else res.destroy();
    }
  }

  /** Close every session (in-flight calls are aborted → 130) and stop listening for tool changes. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deps.tools.off('toolsChanged', this.#onToolsChanged);
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(sessions.map((s) => s.server.close()));
  }

  /**
   * Close every session opened with a principal for which `isCurrent` is now false (a config reload
   * removed or rotated its caller token); their calls in flight settle 130. Returns how many.
   */
  async revoke(isCurrent: (principal: CallerPrincipal) => boolean): Promise<number> {
    const stale = [...this.#sessions].filter(([, s]) => !isCurrent(s.principal));
    for (const [id, s] of stale) {
      this.#sessions.delete(id);
      this.#options.logger.warn({ session: id, caller: s.caller }, 'caller token revoked: closing its MCP session');
    }
    await Promise.allSettled(stale.map(([, s]) => s.server.close()));
    return stale.length;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const remote = req.socket.remoteAddress;
    if (!originAllowed(req, this.#options.allowedOrigins)) {
      this.#options.logger.warn({ remote, origin: String(req.headers.origin).slice(0, 200) }, 'MCP request refused: origin not allowed');
      replyError(res, 403, -32000, 'Forbidden');
      return;
    }
    // The token first (constant-time, cheap): a valid one is accepted even while this address is
    // throttled for failed ones; only a failure is counted, and answered 429 while throttled.
    const principal = this.#deps.auth.authenticate(req.headers.authorization, 'caller');
    if (!principal || principal.role !== 'caller') {
      const limit = this.#deps.limiter?.check(remote);
      this.#deps.limiter?.fail(remote);
      if (limit?.blocked) {
        this.#options.logger.warn({ remote }, 'MCP request refused: not authenticated; too many failed authentications from this address');
        replyError(res, 429, -32000, tooManyFailures(limit.retryAfterMs), { 'retry-after': String(retryAfterSeconds(limit.retryAfterMs)) });
        return;
      }
      this.#options.logger.warn({ remote }, 'MCP request refused: not authenticated');
      const answer = unauthorized(req);
      replyError(res, 401, -32000, answer.message, answer.headers);
      return;
    }
    this.#deps.authenticated?.(req.socket);
    if (this.#closed) {
      replyError(res, 503, -32000, 'Server is shutting down');
      return;
    }
    const authInfo = authInfoOf(principal, res);
    (req as IncomingMessage & { auth?: unknown }).auth = authInfo;
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.#sessions.get(sessionId);
      if (!session || session.caller !== principal.name) {
        replyError(res, 404, -32001, 'Session not found');
        return;
      }
      this.#track(session, res);
      if (req.method !== 'POST' || !plainPostHeaders(req, session.protocolVersions)) {
        await session.transport.http.handleRequest(req, res);
        return;
      }
      const body = await readPostBody(req, this.#options.maxRequestBodyBytes);
      if (body === undefined) {
        res.destroy(); // the client went away while sending
        return;
      }
      if (!body.ok) {
        replyError(res, body.status, body.code, body.message, body.status === 413 ? { connection: 'close' } : {});
        return;
      }
      const request = plainRequest(body.value);
      if (request !== undefined) session.transport.answerJson(request, req, res, authInfo);
      else await session.transport.http.handleRequest(req, res, body.value);
      return;
    }
    if (req.method !== 'POST') {
      replyError(res, 400, -32000, 'Bad Request: No valid session ID provided');
      return;
    }
    const sdk = await loadMcpSdk(); // a failed import rejects → HTTP 500 (handle); retried next time
    if (this.#closed) {
      replyError(res, 503, -32000, 'Server is shutting down');
      return;
    }
    if (this.#sessions.size >= this.#options.maxSessions && !(await this.#evictIdle())) {
      replyError(res, 503, -32000, 'Too many open sessions');
      return;
    }
    await this.#open(sdk, principal, req, res);
  }

  /** A POST without a session id: a new session when it is an `initialize`, else the transport answers 400 and it is dropped. */
  async #open(sdk: McpSdk, principal: CallerPrincipal, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const log = this.#options.logger;
    const { executor, tools } = this.#deps;
    const server = sdk.createMcpServer({ executor, tools, caller: principal, progressIntervalMs: this.#options.progressIntervalMs, logger: log });
    let session: Session | undefined;
    const http = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      maxRequestBodySize: this.#options.maxRequestBodyBytes,
      onsessioninitialized: (id) => {
        if (this.#closed) return;
        session = { caller: principal.name, principal, server, transport, protocolVersions: sdk.protocolVersions, open: 0, lastActive: Date.now() };
        this.#sessions.set(id, session);
        log.info({ session: id, caller: principal.name }, 'MCP session opened');
      },
      onsessionclosed: (id) => this.#forget(id, server),
    });
    const transport = new DoorTransport(http);
    server.onclose = () => {
      if (transport.sessionId !== undefined) this.#forget(transport.sessionId, server);
    };
    server.onerror = (error) => log.debug({ err: error, caller: principal.name }, 'MCP transport error');
    await server.connect(transport);
    await http.handleRequest(req, res);
    if (!session || this.#closed) await server.close();
  }

  /** Count `res` as an open request of `session` until it closes. */
  #track(session: Session, res: ServerResponse): void {
    session.open++;
    session.lastActive = Date.now();
    res.once('close', () => {
      session.open--;
      session.lastActive = Date.now();
    });
  }

  /** Close the least recently active session with no open request; false when every session is busy. */
  async #evictIdle(): Promise<boolean> {
    let victim: [string, Session] | undefined;
    for (const entry of this.#sessions) {
      if (entry[1].open === 0 && (victim === undefined || entry[1].lastActive < victim[1].lastActive)) victim = entry;
    }
    if (victim === undefined) return false;
    this.#sessions.delete(victim[0]);
    this.#options.logger.info({ session: victim[0], caller: victim[1].caller }, 'MCP session evicted (idle, session limit reached)');
    await victim[1].server.close();
    return true;
  }

  #forget(id: string, server: Server): void {
    if (this.#sessions.get(id)?.server !== server) return;
    this.#sessions.delete(id);
    this.#options.logger.info({ session: id }, 'MCP session closed');
  }

  #broadcastToolsChanged(): void {
    for (const [id, session] of this.#sessions) {
      session.server.sendToolListChanged().catch((error: unknown) => {
        this.#options.logger.debug({ err: error, session: id }, 'tools/list_changed not delivered');
      });
    }
  }
}
