/**
 * `/status` (issue 16, item 5): the live status page for people and its JSON for scripts.
 *
 * - `GET /status` — the page (a caller's session cookie or `Authorization: Bearer <caller token>`);
 *   without either: HTTP 401 with the login form;
 * - `POST /status/login` — form field `token` (a caller token; body ≤ 4 KiB): a session cookie and
 *   303 to `/status`; a wrong token: 401 with the form again (counted by the failed-authentication
 *   limiter, 429 while the address is throttled);
 * - `POST /status/logout` — ends the session;
 * - `GET /status/snapshot` — the {@link StatusSnapshot} as JSON plus `you` `{caller, grant}`;
 * - `GET /status/events` — the live feed (Server-Sent Events, `feed.ts`);
 * - `POST /status/stop` — JSON `{"id", "agent"}` (body ≤ 1 KiB, `content-type: application/json`):
 *   stop that call in flight as its own caller's stop does (130); 403 unless the caller's grant
 *   allows the call's tool, 404 for no such call in flight, 409 when it cannot be stopped from here
 *   (not routed to a host yet, or a local tool);
 * - `GET /status/status.js`, `/status/status.css` — the page's script and style (no secrets: served
 *   to anyone).
 *
 * Authentication, cookies and CSRF: `access.ts`; replies and the bounded body read: `replies.ts`.
 * Unauthenticated requests get 401 and nothing of the picture; every status request counts toward
 * the pre-auth bounds until it authenticates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type AuthLimiter, retryAfterSeconds, tooManyFailures } from '../auth/limiter.js';
import { isGranted } from '../executor/gates.js';
import type { CallerAuthenticator } from '../mcp/door-options.js';
import type { CallerPrincipal } from '../mcp/caller.js';
import type { Logger } from '../options.js';
import { StatusSessions, sessionCookie } from './access.js';
import type { CallBoard } from './call-board.js';
import { StatusFeed } from './feed.js';
import { ASSETS, SECURITY_HEADERS, asset, loginPage, statusPage } from './pages.js';
import { json, notAllowed, readBody, reply, tooLarge, unauthorized } from './replies.js';
import { type StatusCluster, type StatusRouter, statusSnapshot } from './snapshot.js';

/** Largest login form body, bytes. */
export const MAX_LOGIN_BODY_BYTES = 4096;
/** Largest stop request body, bytes. */
export const MAX_STOP_BODY_BYTES = 1024;

/** What the status page reads (`ToolwireServerOptions.status*`, `allowedOrigins`, `logger`). */
export interface StatusOptions {
  /** Live feeds open at once (`statusMaxViewers`). */
  maxViewers: number;
  /** Browser session life, ms (`statusSessionMs`). */
  sessionMs: number;
  /** Browser sessions kept (`statusMaxSessions`). */
  maxSessions: number;
  allowedOrigins: readonly string[];
  logger: Logger;
}

/** What the status page needs. */
export interface StatusPageDeps {
  /** The router: hosts, tools, and `toolsChanged`. */
  router: StatusRouter & { on(event: 'toolsChanged', listener: () => void): unknown; off(event: 'toolsChanged', listener: () => void): unknown };
  board: CallBoard;
  /** This node, when the server is a cluster node. */
  cluster?: StatusCluster;
  auth: CallerAuthenticator;
  /** False once a principal's token was removed or rotated. */
  isCurrent: (principal: CallerPrincipal) => boolean;
  limiter: AuthLimiter;
  /** Told about the socket of every authenticated request (it leaves the pre-auth accounting). */
  authenticated: (socket: Socket) => void;
  /** Served over TLS (cookies get `Secure`, origins are `https://`). */
  secure: boolean;
  options: StatusOptions;
}

/** How a request authenticated. */
interface Viewer {
  principal: CallerPrincipal;
  /** By the session cookie (a browser: state changes need a same-origin `Origin`). */
  cookie: boolean;
}

/** The `/status` endpoints of one server. */
export class StatusPage {
  readonly #deps: StatusPageDeps;
  readonly #sessions: StatusSessions;
  readonly #feed: StatusFeed;
  readonly #onToolsChanged = (): void => this.#feed.changed();

  constructor(deps: StatusPageDeps) {
    this.#deps = deps;
    const { options } = deps;
    this.#sessions = new StatusSessions({ sessionMs: options.sessionMs, maxSessions: options.maxSessions, allowedOrigins: options.allowedOrigins }, deps.isCurrent);
    this.#feed = new StatusFeed(() => statusSnapshot(deps.router, deps.board, deps.cluster), options.maxViewers);
    deps.board.onChange(() => this.#feed.changed());
    deps.router.on('toolsChanged', this.#onToolsChanged);
  }

  /** Live feeds open now. */
  get viewers(): number {
    return this.#feed.size;
  }

  /** End every live feed and session, stop listening. Idempotent. */
  close(): void {
    this.#feed.close();
    this.#sessions.clear();
    this.#deps.board.onChange(undefined);
    this.#deps.router.off('toolsChanged', this.#onToolsChanged);
  }

  /** Serve one request whose path is `/status` or under it. Never rejects. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      await this.#route(req, res, path);
    } catch (error) {
      this.#deps.options.logger.error({ err: error }, 'status request failed');
      if (!res.headersSent) reply(res, 500, 'application/json', JSON.stringify({ error: 'internal error' }));
      else res.destroy();
    }
  }

  async #route(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const method = req.method ?? 'GET';
    const name = path.slice('/status/'.length);
    if (path.startsWith('/status/') && Object.hasOwn(ASSETS, name)) {
      if (method !== 'GET' && method !== 'HEAD') return notAllowed(res, 'GET, HEAD');
      return reply(res, 200, ASSETS[name]!, method === 'HEAD' ? undefined : asset(name));
    }
    switch (path) {
      case '/status':
      case '/status/':
        if (method !== 'GET' && method !== 'HEAD') return notAllowed(res, 'GET, HEAD');
        return this.#page(req, res);
      case '/status/login':
        if (method !== 'POST') return notAllowed(res, 'POST');
        return this.#login(req, res);
      case '/status/logout':
        if (method !== 'POST') return notAllowed(res, 'POST');
        return this.#logout(req, res);
      case '/status/snapshot':
        if (method !== 'GET') return notAllowed(res, 'GET');
        return this.#snapshot(req, res);
      case '/status/events':
        if (method !== 'GET') return notAllowed(res, 'GET');
        return this.#events(req, res);
      case '/status/stop':
        if (method !== 'POST') return notAllowed(res, 'POST');
        return this.#stop(req, res);
      default:
        return reply(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
    }
  }

  /**
   * The caller of `req`: its session cookie, else its bearer token. A bearer token that fails is
   * counted by the limiter (a stale cookie is not). `undefined` when neither authenticates.
   */
  #viewer(req: IncomingMessage): Viewer | undefined {
    const fromCookie = this.#sessions.get(sessionCookie(req));
    if (fromCookie !== undefined) {
      this.#deps.authenticated(req.socket);
      return { principal: fromCookie, cookie: true };
    }
    const authorization = req.headers.authorization;
    if (authorization === undefined) return undefined;
    const principal = this.#deps.auth.authenticate(authorization, 'caller');
    if (principal === undefined || principal.role !== 'caller') {
      this.#deps.limiter.fail(req.socket.remoteAddress);
      this.#deps.options.logger.warn({ remote: req.socket.remoteAddress }, 'status request refused: not authenticated');
      return undefined;
    }
    this.#deps.authenticated(req.socket);
    return { principal, cookie: false };
  }

  #page(req: IncomingMessage, res: ServerResponse): void {
    const viewer = this.#viewer(req);
    if (viewer === undefined) return reply(res, 401, 'text/html; charset=utf-8', loginPage());
    reply(res, 200, 'text/html; charset=utf-8', req.method === 'HEAD' ? undefined : statusPage(viewer.principal.name));
  }

  async #login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { limiter, options, secure } = this.#deps;
    const remote = req.socket.remoteAddress;
    if (!this.#sessions.sameOrigin(req, secure, false))
      return reply(res, 403, 'text/html; charset=utf-8', loginPage('refused: the form was not sent from this server’s page'));
    const body = await readBody(req, MAX_LOGIN_BODY_BYTES);
    if (body === undefined) return tooLarge(res, req);
    const token = new URLSearchParams(body).get('token') ?? '';
    const principal = this.#deps.auth.authenticate(`Bearer ${token}`, 'caller');
    if (principal === undefined || principal.role !== 'caller') {
      const limit = limiter.check(remote);
      limiter.fail(remote);
      options.logger.warn({ remote }, 'status login refused: not a caller token');
      if (limit.blocked) {
        res.setHeader('retry-after', String(retryAfterSeconds(limit.retryAfterMs)));
        return reply(res, 429, 'text/html; charset=utf-8', loginPage(tooManyFailures(limit.retryAfterMs)));
      }
      return reply(res, 401, 'text/html; charset=utf-8', loginPage('That is not a caller token of this server.'));
    }
    this.#deps.authenticated(req.socket);
    const id = this.#sessions.open(principal);
    options.logger.info({ caller: principal.name, remote }, 'status page login');
    res.writeHead(303, { ...SECURITY_HEADERS, location: '/status', 'set-cookie': this.#sessions.cookie(id, secure), 'content-length': '0' });
    res.end();
  }

  async #logout(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.#sessions.sameOrigin(req, this.#deps.secure, true))
      return reply(res, 403, 'application/json', JSON.stringify({ error: 'cross-origin request refused' }));
    await readBody(req, MAX_STOP_BODY_BYTES); // a form's empty body
    this.#sessions.close(sessionCookie(req));
    res.writeHead(303, { ...SECURITY_HEADERS, location: '/status', 'set-cookie': StatusSessions.expired(this.#deps.secure), 'content-length': '0' });
    res.end();
  }

  #snapshot(req: IncomingMessage, res: ServerResponse): void {
    const viewer = this.#viewer(req);
    if (viewer === undefined) return unauthorized(res);
    const snapshot = statusSnapshot(this.#deps.router, this.#deps.board, this.#deps.cluster);
    reply(res, 200, 'application/json', JSON.stringify({ you: you(viewer.principal), ...snapshot }));
  }

  #events(req: IncomingMessage, res: ServerResponse): void {
    const viewer = this.#viewer(req);
    if (viewer === undefined) return unauthorized(res);
    const id = sessionCookie(req);
    const principal = viewer.principal;
    const allowed = viewer.cookie ? () => this.#sessions.get(id) !== undefined : () => this.#deps.isCurrent(principal);
    if (!this.#feed.add(res, you(principal), allowed, SECURITY_HEADERS)) {
      res.setHeader('retry-after', '5');
      reply(res, 503, 'application/json', JSON.stringify({ error: `too many status viewers (statusMaxViewers ${this.#deps.options.maxViewers})` }));
    }
  }

  async #stop(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const viewer = this.#viewer(req);
    if (viewer === undefined) return unauthorized(res);
    if (viewer.cookie && !this.#sessions.sameOrigin(req, this.#deps.secure, true)) return json(res, 403, { error: 'cross-origin request refused' });
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return json(res, 415, { error: 'send {"id", "agent"} as application/json' });
    const body = await readBody(req, MAX_STOP_BODY_BYTES);
    if (body === undefined) return tooLarge(res, req);
    let wanted: { id?: unknown; agent?: unknown };
    try {
      wanted = JSON.parse(body) as { id?: unknown; agent?: unknown };
    } catch {
      return json(res, 400, { error: 'the body is not JSON' });
    }
    if (typeof wanted !== 'object' || wanted === null || typeof wanted.id !== 'string' || (wanted.agent !== undefined && typeof wanted.agent !== 'string')) {
      return json(res, 400, { error: 'send {"id": "<call id>", "agent": "<caller>"}' });
    }
    const call = this.#deps.board.find(wanted.id, wanted.agent);
    if (call === undefined) return json(res, 404, { error: 'no such call in flight' });
    if (!isGranted(viewer.principal.grant, call.tool)) return json(res, 403, { error: `your grant does not allow ${call.tool}` });
    const outcome = this.#deps.board.stop(call);
    if (outcome === 'not-found') return json(res, 404, { error: 'no such call in flight' });
    if (outcome === 'not-routed')
      return json(res, 409, { error: 'the call is not running on a tool host yet (or its tool is local): it cannot be stopped from here' });
    this.#deps.options.logger.info({ caller: viewer.principal.name, call: call.id, agent: call.agent, tool: call.tool }, 'call stopped from the status page');
    json(res, 202, { stopped: true, id: call.id, agent: call.agent });
  }
}

function you(principal: CallerPrincipal): { caller: string; grant: readonly string[] } {
  return { caller: principal.name, grant: principal.grant ?? ['*'] };
}
