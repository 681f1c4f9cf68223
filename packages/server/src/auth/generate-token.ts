/**
 * New bearer tokens for host and caller identities.
 */
import { randomBytes } from 'node:crypto';

/**
 * A new bearer token: 24 random bytes (192 bits), base64url — 32 characters of `A–Z a–z 0–9 - _`,
 * never starting with `-`. A leading `-` would make `--token <token>` read as a flag on every
 * command line (`node:util` `parseArgs`, most shells' tools), so such draws are discarded and
 * drawn again: the tokens stay uniform over the rest (1 draw in 64 is redrawn).
 */
export function generateToken(): string {
  for (;;) {
    const token = randomBytes(24).toString('base64url');
    if (token.charCodeAt(0) !== 0x2d /* - */) return token;
  }
}
