/** Client frame masking of a tool host's connection (RFC 6455 §5.3): a random key, or none on loopback. */

/**
 * Whether frames to `url` may go with an all-zero masking key, which ws sends without masking (no
 * copy of each frame) and the server's ws does not unmask: only on the loopback interface, where no
 * intermediary can sit between host and server. Client masking (RFC 6455 §5.3, §10.3) exists so
 * bytes a peer chooses (here: a tool's output) cannot pose as HTTP to an intermediary on the path;
 * across a network frames keep a random key, `wss:` included, since a TLS-terminating proxy or load
 * balancer in front of the server reads them in the clear.
 */
export function unmaskedIsSafe(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') return false;
  const host = parsed.hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** ws `generateMask`: the all-zero key (see {@link unmaskedIsSafe}). */
export function zeroMask(mask: Buffer): void {
  mask.fill(0);
}
