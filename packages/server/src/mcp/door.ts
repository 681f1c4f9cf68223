/**
 * The MCP door: MCP Streamable HTTP at `/mcp` on the server's http server, so agents call tools
 * through any MCP client, on the MCP SDK v2 (`@modelcontextprotocol/server`, `sdk.ts`). One endpoint
 * serves every protocol revision the SDK speaks:
 * - **2025 era** (2025-06-18, 2025-11-25 and older; no per-request `_meta` envelope): stateful. An
 *   `initialize` POST opens a session (one SDK `Server` + one `NodeStreamableHTTPServerTransport`,
 *   session id a random UUID in `Mcp-Session-Id`); a DELETE, idle expiry, eviction, a transport close
 *   or {@link McpDoor.close} ends it, and ending a session stops its calls (130).
 *   A plain `tools/call` of a session (one request, no progress token, no live output) is answered
 *   by the door itself with the bytes the SDK transport would write (`plain-call.ts`); everything
 *   else in a session goes to the session's SDK transport.
 * - **2026-07-28**: stateless. Each request carries its `_meta` envelope and is served by a fresh
 *   `Server` through the SDK's `createMcpHandler` (`server/discover`, per-request `_meta`, the
 *   `Mcp-Method`/`Mcp-Name` header checks); tool-list changes reach `subscriptions/listen` streams.
 *
 * Every request must carry `Authorization: Bearer <caller token>`; otherwise HTTP 401 with a JSON-RPC
 * error (`-32000`, "Unauthorized: a caller bearer token is required …" and how `toolwire token add
 * caller` makes one) and `WWW-Authenticate: Bearer` with an `error_description` and the
 * protected-resource metadata URL (`endpoint/http-front.ts`); nothing about which tokens exist. The caller's
 * name is the agent id and its grant the grant; a session is bound to the caller that opened it (a
 * request for another caller's session gets 404 "Session not found", as an unknown session does).
 *
 * Before authentication: a request with an `Origin` header (a browser) that is neither in
 * `allowedOrigins` nor the server's own origin as the request addressed it (`sameOrigin`: scheme and
 * `Host`, which the Host check has already vetted) → HTTP 403. The token is checked next; a valid one is accepted even while its address is throttled.
 * A failed authentication is counted by the limiter and logged at warn (remote address, never the
 * token); from an address that failed too often it gets HTTP 429 with `Retry-After` and the message
 * `too many failed authentications from this address; retry after N s` instead of 401.
 *
 * A POST body is read by the door (`raw-body.ts`): at most `maxRequestBodyBytes` (default 4 MiB;
 * more → HTTP 413), UTF-8 JSON (else HTTP 400, `-32700`); a `tools/call` whose arguments would reach
 * the tool changed (a repeated key, a `__proto__` key, a number the parse would change:
 * `input-scan.ts`) completes 65 with the path and the reason; one whose arguments are nested deeper than
 * `maxInputDepth` (default 1000 levels) is answered by the door itself, HTTP 400 with JSON-RPC `-32602`
 * (the SDK's own parse of such a body overflows the stack).
 *
 * Limits: open sessions `maxSessions` (default 1024) in total and `maxSessionsPerCaller` (default 64)
 * per caller: at either limit a new session evicts the least recently active idle session (of that
 * caller, at the per-caller limit; idle: no request of it open), and when none is idle the answer is
 * HTTP 503 naming the limit. A session with no POST or DELETE open for `sessionIdleMs` (default
 * 15 min) expires, even with its GET notification stream open; its calls, if any, stop (130)
 * (`door-sessions.ts`).
 *
 * The MCP SDK is loaded when the first authenticated request needs it (`sdk.ts`), not when this
 * module is imported; if that import fails, the request gets HTTP 500 and the next one tries again.
 */
import { randomUUID } from 'node:crypto';
import pTimeout from 'p-timeout';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import type { McpHttpHandler } from '@modelcontextprotocol/server';
import { retryAfterSeconds, tooManyFailures } from '../auth/limiter.js';
import { originAllowed, sameOrigin } from '../auth/origin.js';
import { unauthorized } from '../endpoint/http-front.js';
import { type CallerPrincipal, type RequestState, authInfoOf } from './caller.js';
import { asksLiveOutput, hasInitialize, replyError } from './door-messages.js';
import { DEFAULT_MAX_LISTENS_PER_CALLER, type McpDoorDeps, type McpDoorOptions } from './door-options.js';
import { type DoorSession, DoorSessions } from './door-sessions.js';
import { PlainCalls, plainCallOf } from './plain-call.js';
import { ListenStreams, isListen } from './listen-streams.js';
import { inputErrorsOf, readJsonBody } from './raw-body.js';
import { type McpSdk, loadMcpSdk } from './sdk.js';

/** The MCP Streamable HTTP endpoint. Hand it every request whose path is `/mcp`. */
export class McpDoor {
  readonly #deps: McpDoorDeps;
  readonly #options: McpDoorOptions;
  /** The 2025-era sessions, their limits and idle expiry (`door-sessions.ts`). */
  readonly #sessions: DoorSessions;
  /** The `subscriptions/listen` streams of each caller (`listen-streams.ts`). */
  readonly #listens: ListenStreams;
  /** The 2026-07-28 handler (made with the SDK, at the first modern request). */
  #modern: { handler: McpHttpHandler; node: NodeMcpRequestHandler } | undefined;
  /** The protocol revisions a session transport accepts (known once the SDK is loaded). */
  #supported: readonly string[] = [];
  #closed = false;
  /** Authenticated POSTs whose answer is not yet written (every session's and the 2026-07-28 handler's). */
  readonly #answering = new Set<ServerResponse>();
  /** Resolves the wait of {@link McpDoor.close} once {@link #answering} is empty. */
  #answered: (() => void) | undefined;
  readonly #onToolsChanged = (): void => this.#broadcastToolsChanged();

  constructor(deps: McpDoorDeps) {
    this.#deps = deps;
    this.#options = deps.options;
    this.#listens = new ListenStreams(deps.options.maxListensPerCaller ?? DEFAULT_MAX_LISTENS_PER_CALLER);
    this.#sessions = new DoorSessions(deps.options);
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

  /**
   * Close every session (in-flight calls are aborted → 130) and stop listening for tool changes.
   * New requests are answered 503 at once; with `answerWaitMs` (ms, default 0) the POSTs already
   * being answered get up to that long to write their answers first — `ToolwireServer.close()` passes
   * it once its calls have settled, so each caller receives its call's result (a call answered through
   * the SDK transport, with a progress token or live output, is written a few turns after it settles).
   * Idempotent.
   */
  async close(answerWaitMs = 0): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#sessions.stopSweep();
    this.#deps.tools.off('toolsChanged', this.#onToolsChanged);
    if (answerWaitMs > 0 && this.#answering.size > 0) {
      await pTimeout(new Promise<void>((resolve) => (this.#answered = resolve)), { milliseconds: answerWaitMs, message: false });
      this.#answered = undefined;
    }
    await Promise.allSettled([this.#sessions.closeAll(), this.#modern?.handler.close()]);
  }

  /**
   * Close every session opened with a principal for which `isCurrent` is now false (a config reload
   * removed or rotated its caller token): their calls in flight settle 130 and, within
   * `answerWaitMs` (ms, default 0), their answers are written before the sessions close. Returns how many.
   */
  revoke(isCurrent: (principal: CallerPrincipal) => boolean, answerWaitMs = 0): Promise<number> {
    return this.#sessions.revoke(isCurrent, answerWaitMs);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const remote = req.socket.remoteAddress;
    if (!originAllowed(req, this.#options.allowedOrigins) && !sameOrigin(req)) {
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
    const state: RequestState = { response: res, headers: req.headers };
    let body: unknown;
    if (req.method === 'POST') {
      this.#answering.add(res);
      res.once('close', () => {
        this.#answering.delete(res);
        if (this.#answering.size === 0) this.#answered?.();
      });
      const raw = await readJsonBody(req, this.#options.maxRequestBodyBytes);
      if (!raw.ok) {
        replyError(res, raw.status, raw.code, raw.message);
        return;
      }
      body = raw.body;
      const inputErrors = inputErrorsOf(body, raw.text, this.#options.maxInputDepth);
      if (inputErrors?.tooDeep !== undefined) {
        // Refused here, on either era's path: the SDK's own parse of such arguments overflows the stack.
        replyError(res, 400, -32602, `Invalid params: ${inputErrors.tooDeep.reason}`, {}, inputErrors.tooDeep.id);
        return;
      }
      if (inputErrors !== undefined) state.inputErrors = inputErrors.byId;
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.#sessions.get(sessionId);
      if (!session || session.caller !== principal.name) {
        replyError(res, 404, -32001, 'Session not found');
        return;
      }
      if (req.method === 'POST') {
        session.plain.cancel(body);
        const plain = plainCallOf(body, req.headers, this.#supported);
        if (plain !== undefined && !session.plain.has(plain.id)) {
          plain.call.inputError = state.inputErrors?.get(plain.id);
          this.#sessions.track(session, req, res, false);
          await session.plain.serve(plain, principal, req.headers, res);
          return;
        }
      }
      (req as IncomingMessage & { auth?: unknown }).auth = authInfoOf(principal, state);
      this.#sessions.track(session, req, res, req.method === 'POST' && !asksLiveOutput(body));
      await session.transport.handleRequest(req, res, body);
      return;
    }
    (req as IncomingMessage & { auth?: unknown }).auth = authInfoOf(principal, state);
    if (req.method !== 'POST') {
      replyError(res, 400, -32000, 'Bad Request: No valid session ID provided');
      return;
    }
    const sdk = await loadMcpSdk(); // a failed import rejects → HTTP 500 (handle); retried next time
    this.#supported = sdk.supportedProtocolVersions;
    if (this.#closed) {
      replyError(res, 503, -32000, 'Server is shutting down');
      return;
    }
    if (!hasInitialize(body)) {
      if (await sdk.isLegacyRequest(await sdk.toWebRequest(req, null), body)) {
        replyError(res, 400, -32000, 'Bad Request: No valid session ID provided');
        return;
      }
      if (isListen(body)) {
        const refusal = this.#listens.admit(principal.name, res);
        if (refusal !== undefined) {
          replyError(res, 503, -32000, refusal);
          return;
        }
      }
      await this.#modernHandler(sdk)(req, res, body);
      return;
    }
    const room = this.#sessions.reserve(principal.name);
    if (typeof room === 'string') {
      replyError(res, 503, -32000, room);
      return;
    }
    try {
      await room.evicted;
      await this.#open(sdk, principal, req, res, body, room.release);
    } finally {
      room.release();
    }
  }

  /** The 2026-07-28 handler: a fresh `Server` per request, for the caller in the request's `AuthInfo`. */
  #modernHandler(sdk: McpSdk): NodeMcpRequestHandler {
    if (this.#modern !== undefined) return this.#modern.node;
    const log = this.#options.logger;
    const { executor, tools } = this.#deps;
    const handler = sdk.createMcpHandler(
      ({ authInfo }) => {
        const caller = authInfo?.extra?.principal as CallerPrincipal;
        return sdk.createMcpServer({ executor, tools, caller, progressIntervalMs: this.#options.progressIntervalMs, logger: log });
      },
      {
        legacy: 'reject',
        maxRequestBodySize: this.#options.maxRequestBodyBytes,
        onerror: (error) => log.debug({ err: error }, 'MCP request refused or failed (2026-07-28)'),
      },
    );
    const node = sdk.toNodeHandler(handler, { maxRequestBodySize: this.#options.maxRequestBodyBytes });
    this.#modern = { handler, node };
    return node;
  }

  /** A POST without a session id: a new session when it is an `initialize`, else the transport answers 400 and it is dropped. */
  async #open(sdk: McpSdk, principal: CallerPrincipal, req: IncomingMessage, res: ServerResponse, body: unknown, opened: () => void): Promise<void> {
    const log = this.#options.logger;
    const { executor, tools } = this.#deps;
    const stop = new AbortController();
    const server = sdk.createMcpServer({ executor, tools, caller: principal, progressIntervalMs: this.#options.progressIntervalMs, logger: log, stop: stop.signal });
    let session: DoorSession | undefined;
    const transport = new sdk.NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      maxRequestBodySize: this.#options.maxRequestBodyBytes,
      onsessioninitialized: (id) => {
        if (this.#closed) return;
        const plain = new PlainCalls(id, { executor, tools, validate: (request, result) => sdk.validateToolResult(server, request, result) });
        session = { caller: principal.name, principal, server, transport, open: 0, busy: 0, lastActive: Date.now(), plain, stop, onIdle: undefined };
        this.#sessions.add(id, session);
        opened(); // counted as a session now, no longer as one being opened
        log.info({ session: id, caller: principal.name }, 'MCP session opened');
      },
      onsessionclosed: (id) => this.#sessions.forget(id, server),
    });
    server.onclose = () => {
      session?.plain.closeAll();
      if (transport.sessionId !== undefined) this.#sessions.forget(transport.sessionId, server);
    };
    server.onerror = (error) => log.debug({ err: error, caller: principal.name }, 'MCP transport error');
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    if (!session || this.#closed) await server.close();
  }

  #broadcastToolsChanged(): void {
    this.#modern?.handler.notify.toolsChanged();
    this.#sessions.sendToolListChanged();
  }
}
