/**
 * Who may see the status page, and how a browser holds that right (issue 16, item 5).
 *
 * A browser logs in once with a caller token (a form POSTed to `/status/login`); the server keeps a
 * random session id → the caller principal, and gives the browser only that id, in the cookie
 * `toolwire_status` (`HttpOnly`, `SameSite=Strict`, `Path=/status`, `Secure` under TLS). The token
 * itself never reaches the cookie, the page or a log. Scripts (the CLI) send
 * `Authorization: Bearer <caller token>` instead.
 *
 * CSRF: a `SameSite=Strict` cookie is not sent on any request another site starts, and every
 * request that changes something (login, logout, stop) is a POST that must carry an `Origin` equal to
 * the server's own (or one in `allowedOrigins`); a stop is JSON with a custom header, so a foreign
 * page could not send it without a CORS preflight the server never grants. Pages are served with
 * `frame-ancestors 'none'` (no clickjacking of the stop button).
 *
 * Sessions are bounded (`statusMaxSessions`, the oldest is dropped), expire (`statusSessionMs`), and
 * end as soon as their caller token is removed or rotated (`isCurrent`, checked on every request).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { CallerPrincipal } from '../mcp/caller.js';

/** The cookie holding a status session id. */
export const COOKIE = 'toolwire_status';

interface Session {
  principal: CallerPrincipal;
  expiresAt: number;
}

/** What sessions read (`ToolwireServerOptions.statusSessionMs`, `statusMaxSessions`). */
export interface StatusAccessOptions {
  /** A session's life from login, ms. */
  sessionMs: number;
  /** Sessions kept at most; a new login over it drops the oldest. */
  maxSessions: number;
  /** Origins allowed besides the server's own (lower-case). */
  allowedOrigins: readonly string[];
}

/** Browser sessions of the status page. */
export class StatusSessions {
  readonly #options: StatusAccessOptions;
  readonly #isCurrent: (principal: CallerPrincipal) => boolean;
  /** In login order (a Map iterates in insertion order: the first is the oldest). */
  readonly #sessions = new Map<string, Session>();

  /** @param isCurrent false once the principal's token was removed or rotated */
  constructor(options: StatusAccessOptions, isCurrent: (principal: CallerPrincipal) => boolean) {
    this.#options = options;
    this.#isCurrent = isCurrent;
  }

  /** Open a session for `principal`; returns its id (32 random bytes, base64url). */
  open(principal: CallerPrincipal): string {
    while (this.#sessions.size >= this.#options.maxSessions) {
      const oldest = this.#sessions.keys().next().value as string;
      this.#sessions.delete(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    this.#sessions.set(id, { principal, expiresAt: Date.now() + this.#options.sessionMs });
    return id;
  }

  /** The caller of session `id`, or `undefined` when unknown, expired or its token no longer current (then it is dropped). */
  get(id: string | undefined): CallerPrincipal | undefined {
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    if (session.expiresAt <= Date.now() || !this.#isCurrent(session.principal)) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session.principal;
  }

  /** End session `id` (logout). */
  close(id: string | undefined): void {
    if (id !== undefined) this.#sessions.delete(id);
  }

  /** Drop every session. */
  clear(): void {
    this.#sessions.clear();
  }

  /** The `Set-Cookie` value for session `id`; `secure` under TLS. */
  cookie(id: string, secure: boolean): string {
    const maxAge = Math.floor(this.#options.sessionMs / 1000);
    return `${COOKIE}=${id}; Path=/status; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  /** The `Set-Cookie` value that removes the cookie. */
  static expired(secure: boolean): string {
    return `${COOKIE}=; Path=/status; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
  }

  /**
   * True when a state-changing request comes from the page itself: its `Origin` is the server's own
   * (`<scheme>://<Host>`) or allowed, and `Sec-Fetch-Site`, when sent, is `same-origin`. With
   * `required` false a request without `Origin` passes (a non-browser client).
   */
  sameOrigin(req: IncomingMessage, secure: boolean, required: boolean): boolean {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return false;
    const origin = req.headers.origin?.toLowerCase();
    if (origin === undefined) return !required;
    const host = req.headers.host?.toLowerCase();
    if (host !== undefined && origin === `${secure ? 'https' : 'http'}://${host}`) return true;
    return this.#options.allowedOrigins.includes(origin);
  }
}

/** The status session id in `req`'s `Cookie` header, if any. */
export function sessionCookie(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}
