/**
 * Errors a {@link ToolHost} reports through its `error` event (or logs when nobody listens).
 */
import { CloseCode } from '@toolwire/protocol';

/**
 * The server closed this host's connection with 4000 (REPLACED, DESIGN §5): a newer connection with
 * the same host identity — the same token — is live. The host stops reconnecting, because dialing
 * again would replace the other connection in turn and the two would flap forever.
 */
export class HostReplacedError extends Error {
  /** The close code that ended the connection: 4000. */
  readonly closeCode = CloseCode.REPLACED;

  constructor() {
    super('replaced by a newer connection of the same host identity: another host is using this token');
    this.name = 'HostReplacedError';
  }
}

/** Why a server refused this host's connection for good: see {@link ServerRefusedError}. */
export type RefusalKind = 'token' | 'origin' | 'tls' | 'http';

/**
 * The server refused this host's connection in a way that redialing cannot fix, so the host stops
 * reconnecting (issue 10 §4; only network failures, HTTP 5xx and 429 are retried):
 * - `token` — HTTP 401 at the upgrade ({@link TokenRefusedError});
 * - `origin` — HTTP 403: the server refused the request's `Origin` or `Host` header (the message gives
 *   the server's reason when it sent one, e.g. a loopback server's DNS-rebinding check);
 * - `tls` — the TLS handshake failed: certificate not trusted, expired, or not for that host name;
 * - `http` — any other HTTP 4xx (and 1xx–3xx) answer to the upgrade.
 * `url` is the server URL without user name or password; no message ever contains the token.
 */
export class ServerRefusedError extends Error {
  constructor(
    readonly kind: RefusalKind,
    readonly url: string,
    message: string,
    /** The HTTP status of the refusal, when the server answered one. */
    readonly status?: number,
    /** The TLS error code (e.g. `DEPTH_ZERO_SELF_SIGNED_CERT`, `ERR_TLS_CERT_ALTNAME_INVALID`) for `kind: 'tls'`. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ServerRefusedError';
  }
}

/**
 * The server does not accept this host's token (unknown, revoked, or a caller token): it answered
 * the upgrade with HTTP 401, or with 429 carrying a `WWW-Authenticate` challenge (the token was
 * checked and refused while the address is throttled for failed authentications; waiting would not
 * help, and every retry would extend the throttle). The host stops reconnecting; `toolwire host`
 * exits 77 (EX_NOPERM). `status` is 401 or 429; the message names the server's reason when it gave one.
 */
export class TokenRefusedError extends ServerRefusedError {
  constructor(url: string, status: 401 | 429 = 401, reason?: string) {
    const why = reason === undefined || reason === '' ? '' : `: ${reason}`;
    super('token', url, `the server ${url} did not accept this host's token (HTTP ${status}${why})`, status);
    this.name = 'TokenRefusedError';
  }
}
