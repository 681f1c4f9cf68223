/** Issue 10 §4 — which failed dials are retried, and what a refusal says. */
import { describe, expect, it } from 'vitest';
import type { CloseInfo } from '../src/connection/host-socket-options.js';
import { displayUrl, refusalOf, retryAfterMs } from '../src/connection/refusal.js';
import { TokenRefusedError } from '../src/host/errors.js';

const failedDial = (extra: Partial<CloseInfo>): CloseInfo => ({ opened: false, welcomed: false, code: 1006, reason: '', ...extra });
const withCode = (code: string): Error => Object.assign(new Error(code), { code });
const URL_ = 'wss://user:secret@example.test:7700';

describe('refusalOf', () => {
  it('stops on 401 (token), 403 (origin), other 4xx and 3xx; retries 429, 5xx, network failures and lost connections', () => {
    expect(refusalOf(failedDial({ status: 401 }), URL_)).toBeInstanceOf(TokenRefusedError);
    expect(refusalOf(failedDial({ status: 403 }), URL_)?.kind).toBe('origin');
    expect(refusalOf(failedDial({ status: 404 }), URL_)?.kind).toBe('http');
    expect(refusalOf(failedDial({ status: 302 }), URL_)?.kind).toBe('http');
    for (const status of [429, 500, 502, 503]) expect(refusalOf(failedDial({ status }), URL_)).toBeUndefined();
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT']) expect(refusalOf(failedDial({ error: withCode(code) }), URL_)).toBeUndefined();
    expect(refusalOf({ opened: true, welcomed: true, code: 1006, reason: '' }, URL_)).toBeUndefined();
  });

  it('stops on a 429 that challenges the token (address throttled for failed authentications), naming the reason', () => {
    const reason = 'too many failed authentications from this address; retry after 32 s';
    const refused = refusalOf(failedDial({ status: 429, challenged: true, body: reason }), URL_);
    expect(refused).toBeInstanceOf(TokenRefusedError);
    expect(refused!.status).toBe(429);
    expect(refused!.message).toBe(`the server wss://example.test:7700 did not accept this host's token (HTTP 429: ${reason})`);
    expect(refusalOf(failedDial({ status: 429, body: 'too many connections' }), URL_)).toBeUndefined();
  });

  it('names the reason a 403 gave (the Host check of a loopback server), and the Origin or Host check when it gave none', () => {
    const reason =
      'Host "vm:7700" is not allowed here (DNS-rebinding protection): use a loopback name (localhost, 127.0.0.1, [::1]) or list the name in allowedHosts';
    expect(refusalOf(failedDial({ status: 403, body: reason }), URL_)!.message).toBe(
      `the server wss://example.test:7700 refused this connection (HTTP 403): ${reason}`,
    );
    expect(refusalOf(failedDial({ status: 403 }), URL_)!.message).toBe(
      'the server wss://example.test:7700 refused this connection (HTTP 403): its Origin or Host header is not allowed',
    );
  });

  it('names a TLS failure plainly: certificate not trusted, hostname mismatch, not a TLS server', () => {
    const untrusted = refusalOf(failedDial({ error: withCode('DEPTH_ZERO_SELF_SIGNED_CERT') }), URL_)!;
    expect(untrusted.kind).toBe('tls');
    expect(untrusted.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(untrusted.message).toBe(
      'TLS failure with wss://example.test:7700: its certificate is self-signed and not trusted (give the CA with --ca) (DEPTH_ZERO_SELF_SIGNED_CERT)',
    );
    expect(refusalOf(failedDial({ error: withCode('ERR_TLS_CERT_ALTNAME_INVALID') }), URL_)!.message).toMatch(/not for this host name \(hostname mismatch\)/);
    expect(refusalOf(failedDial({ error: withCode('ERR_SSL_WRONG_VERSION_NUMBER') }), URL_)!.message).toMatch(/handshake failed — is it a wss:\/\/ server\?/);
    // A CA was given (--ca) and did not sign it: not told to give one.
    expect(refusalOf(failedDial({ error: withCode('UNABLE_TO_VERIFY_LEAF_SIGNATURE') }), URL_, true)!.message).toBe(
      'TLS failure with wss://example.test:7700: its certificate is not signed by a trusted CA (not by the CA given with --ca) (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    );
    // Node 20's form of the same (a plain server's answer): EPROTO, the OpenSSL reason in the message only.
    const eproto = Object.assign(new Error('write EPROTO 80:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:ssl3_record.c:350:\n'), {
      code: 'EPROTO',
    });
    expect(refusalOf(failedDial({ error: eproto }), URL_)!.message).toBe(
      'TLS failure with wss://example.test:7700: the server does not speak TLS — is it a ws:// server? (EPROTO: wrong version number)',
    );
    // Any other EPROTO is a network failure, retried.
    expect(refusalOf(failedDial({ error: Object.assign(new Error('read EPROTO'), { code: 'EPROTO' }) }), URL_)).toBeUndefined();
  });

  it('never puts credentials of the URL in a message', () => {
    expect(displayUrl(URL_)).toBe('wss://example.test:7700');
    expect(refusalOf(failedDial({ status: 401 }), URL_)!.message).not.toContain('secret');
  });
});

describe('retryAfterMs', () => {
  it('takes whole seconds or an HTTP date, bounded by maxMs; none, zero or junk falls back to the backoff', () => {
    expect(retryAfterMs(failedDial({ status: 429, retryAfter: '2' }), 30_000)).toBe(2_000);
    expect(retryAfterMs(failedDial({ status: 429, retryAfter: '3600' }), 30_000)).toBe(30_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(failedDial({ status: 429, retryAfter: 'Thu, 01 Jan 2026 00:00:05 GMT' }), 30_000, now)).toBe(5_000);
    expect(retryAfterMs(failedDial({ status: 429, retryAfter: '0' }), 30_000)).toBeUndefined();
    expect(retryAfterMs(failedDial({ status: 429, retryAfter: 'soon' }), 30_000)).toBeUndefined();
    expect(retryAfterMs(failedDial({ status: 429 }), 30_000)).toBeUndefined();
    expect(retryAfterMs(failedDial({ status: 503, retryAfter: '1' }), 30_000)).toBeUndefined();
  });
});
