/**
 * What a TLS failure of an https:// request means, in words, for the caller commands' "cannot reach
 * server" line (`tools`, `call`, `status`, `mcp`): a bare OpenSSL code does not tell a newcomer that
 * the fix for a private CA is `NODE_EXTRA_CA_CERTS=ca.pem` (these commands take no `--ca`).
 */

const TRUST = '; for a private CA, run with NODE_EXTRA_CA_CERTS=ca.pem';

/** Node/OpenSSL certificate error codes: what they say, and whether trusting a CA is the fix. */
const CERT_CODES: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: `its certificate is self-signed and not trusted (DEPTH_ZERO_SELF_SIGNED_CERT)${TRUST}`,
  SELF_SIGNED_CERT_IN_CHAIN: `its certificate chain ends in a CA that is not trusted (SELF_SIGNED_CERT_IN_CHAIN)${TRUST}`,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: `its certificate is not signed by a trusted CA (UNABLE_TO_VERIFY_LEAF_SIGNATURE)${TRUST}`,
  UNABLE_TO_GET_ISSUER_CERT: `its certificate is not signed by a trusted CA (UNABLE_TO_GET_ISSUER_CERT)${TRUST}`,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: `its certificate is not signed by a trusted CA (UNABLE_TO_GET_ISSUER_CERT_LOCALLY)${TRUST}`,
  CERT_HAS_EXPIRED: 'its certificate has expired (CERT_HAS_EXPIRED)',
  CERT_NOT_YET_VALID: 'its certificate is not valid yet (CERT_NOT_YET_VALID)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its certificate is not for this host name (ERR_TLS_CERT_ALTNAME_INVALID): use a name or address the certificate names',
};

/** OpenSSL reasons of a TLS client that got bytes that are not a TLS record (from a plain server). */
const NOT_TLS = /wrong version number|packet length too long|http request/;

/**
 * `TLS: <reason>` for an error (or its `cause`, as fetch wraps it) that is a TLS failure, else
 * `undefined`: certificate codes of {@link CERT_CODES}, and `EPROTO` with an OpenSSL reason of a
 * server that does not speak TLS.
 */
export function tlsReason(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    const cert = CERT_CODES[code];
    if (cert !== undefined) return `TLS: ${cert}`;
    const plain = code === 'EPROTO' ? NOT_TLS.exec(e.message) : null;
    if (plain !== null) return `TLS: the server does not speak TLS — is it an http:// server? (EPROTO: ${plain[0]})`;
  }
  return undefined;
}
