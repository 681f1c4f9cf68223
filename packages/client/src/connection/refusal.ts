/**
 * What a failed dial means for the next one (issue 10 §4): only network failures, HTTP 5xx and
 * HTTP 429 are worth retrying; a 401 (token) or a 429 with a `WWW-Authenticate` challenge (the
 * token was refused while the address is throttled), 403 (Origin or Host header), another 4xx or a TLS failure (a
 * certificate not trusted, expired or for another name) will not change by redialing, so the host
 * stops with a {@link ServerRefusedError} that says so plainly. Never names the token.
 */
import { ServerRefusedError, TokenRefusedError } from '../host/errors.js';
import type { CloseInfo } from './host-socket-options.js';

/** Node/OpenSSL error codes of a TLS handshake that failed on the certificate (not on the network). */
const CERT_CODES = new Map<string, string>([
  ['DEPTH_ZERO_SELF_SIGNED_CERT', 'its certificate is self-signed and not trusted (give the CA with --ca)'],
  ['SELF_SIGNED_CERT_IN_CHAIN', 'its certificate chain ends in a CA that is not trusted (give the CA with --ca)'],
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'its certificate is not signed by a trusted CA (give the CA with --ca)'],
  ['UNABLE_TO_GET_ISSUER_CERT', 'its certificate is not signed by a trusted CA (give the CA with --ca)'],
  ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'its certificate is not signed by a trusted CA (give the CA with --ca)'],
  ['CERT_UNTRUSTED', 'its certificate is not trusted'],
  ['CERT_REJECTED', 'its certificate was rejected'],
  ['CERT_SIGNATURE_FAILURE', 'its certificate signature is invalid'],
  ['CERT_REVOKED', 'its certificate is revoked'],
  ['CERT_HAS_EXPIRED', 'its certificate has expired'],
  ['CERT_NOT_YET_VALID', 'its certificate is not valid yet'],
  ['ERR_TLS_CERT_ALTNAME_INVALID', 'its certificate is not for this host name (hostname mismatch)'],
  ['HOSTNAME_MISMATCH', 'its certificate is not for this host name (hostname mismatch)'],
]);

/** OpenSSL reasons of a TLS client that got bytes that are not a TLS record (from a plain server). */
const NOT_TLS = /wrong version number|packet length too long|http request/;

/** `url` without user name and password, for messages. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href.replace(/\/$/, '');
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The refusal a failed dial amounts to, or `undefined` when it is worth retrying (a network
 * failure, HTTP 5xx, HTTP 429, a connection that was upgraded and then lost). `caGiven`: the host
 * trusts a CA of its own (`ca`), so an untrusted certificate is not blamed on a missing `--ca`.
 */
export function refusalOf(info: CloseInfo, url: string, caGiven = false): ServerRefusedError | undefined {
  if (info.opened) return undefined;
  const where = displayUrl(url);
  const status = info.status;
  if (status !== undefined) {
    if (status === 401) return new TokenRefusedError(where);
    // A 429 with a challenge answers a token that was checked and refused (DESIGN §5): stop as for a 401.
    if (status === 429 && info.challenged === true) return new TokenRefusedError(where, 429, info.body?.slice(0, 200));
    // A toolwire server's Host check (DNS rebinding) says why in the body; its Origin check says nothing.
    if (status === 403) {
      const why = info.body ?? 'its Origin or Host header is not allowed';
      return new ServerRefusedError('origin', where, `the server ${where} refused this connection (HTTP 403): ${why}`, 403);
    }
    if (status >= 500 || status === 429) return undefined;
    // The first line of its body, when it gave one (e.g. a TLS port answering plain HTTP: "this port speaks TLS: …").
    const why = info.body ? `: ${info.body.slice(0, 200)}` : '';
    return new ServerRefusedError('http', where, `the server ${where} refused the upgrade with HTTP ${status}${why}; not retrying`, status);
  }
  const code: unknown = info.error !== undefined && 'code' in info.error ? info.error.code : undefined;
  if (typeof code !== 'string') return undefined;
  // With a CA given, "give the CA with --ca" would send the operator in circles: that CA did not sign it.
  const cert = caGiven ? CERT_CODES.get(code)?.replace('(give the CA with --ca)', '(not by the CA given with --ca)') : CERT_CODES.get(code);
  if (cert !== undefined) return new ServerRefusedError('tls', where, `TLS failure with ${where}: ${cert} (${code})`, undefined, code);
  // Node reports a TLS record that is not TLS (a plain HTTP server's answer) as EPROTO, with the
  // OpenSSL reason only in the message: the server does not speak TLS, and redialing will not change it.
  const plain = code === 'EPROTO' ? NOT_TLS.exec(info.error!.message) : null;
  if (plain !== null) {
    return new ServerRefusedError(
      'tls',
      where,
      `TLS failure with ${where}: the server does not speak TLS — is it a ws:// server? (EPROTO: ${plain[0]})`,
      undefined,
      code,
    );
  }
  if (code.startsWith('ERR_SSL_')) {
    return new ServerRefusedError('tls', where, `TLS failure with ${where}: the handshake failed — is it a wss:// server? (${code})`, undefined, code);
  }
  return undefined;
}

/**
 * The wait a 429 asks for, ms: its `Retry-After` (whole seconds, or an HTTP date), at most `maxMs`;
 * `undefined` when the answer was not a 429 or named no usable (positive) wait: the backoff applies.
 */
export function retryAfterMs(info: CloseInfo, maxMs: number, now: number = Date.now()): number | undefined {
  if (info.status !== 429 || info.retryAfter === undefined) return undefined;
  const value = info.retryAfter.trim();
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms) || ms <= 0) return undefined; // no wait named: the backoff, never a tight loop
  return Math.min(ms, maxMs);
}
