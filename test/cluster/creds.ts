/**
 * NATS decentralized auth for tests, made here with `@nats-io/nkeys`: an operator, a system account
 * and one account with JetStream, as JWTs (ed25519-nkey), the nats-server config that trusts them
 * (memory resolver), and a user `.creds` file (user JWT + seed) as `nsc` writes it.
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type KeyPair, createAccount, createOperator, createUser } from '@nats-io/nkeys';

const b64url = (data: Uint8Array | string): string => Buffer.from(data).toString('base64url');

/** RFC 4648 base32 without padding (a JWT id as the NATS tools write it). */
function base32(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** A JWT of `claims.nats` for subject `sub`, signed by `issuer` (the claims' `jti` as nsc computes it). */
function jwt(issuer: KeyPair, sub: string, name: string, nats: Record<string, unknown>): string {
  const claims: Record<string, unknown> = { iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub, nats: { ...nats, version: 2 } };
  claims.jti = base32(createHash('sha256').update(JSON.stringify(claims)).digest());
  const head = `${b64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }))}.${b64url(JSON.stringify(claims))}`;
  return `${head}.${b64url(issuer.sign(Buffer.from(head)))}`;
}

/** Write `nats.conf` (operator mode) and `user.creds` to `dir`; paths returned. */
export async function decentralizedAuth(dir: string): Promise<{ config: string; creds: string; strangerCreds: string }> {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const other = createAccount();
  const unlimited = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
  const js = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const op = jwt(operator, operator.getPublicKey(), 'op', { type: 'operator', system_account: system.getPublicKey() });
  const sys = jwt(operator, system.getPublicKey(), 'SYS', { type: 'account', limits: unlimited });
  const acc = jwt(operator, account.getPublicKey(), 'TOOLWIRE', { type: 'account', limits: { ...unlimited, ...js } });
  const otherAcc = jwt(operator, other.getPublicKey(), 'OTHER', { type: 'account', limits: { ...unlimited, ...js } });
  const config = join(dir, 'operator.conf');
  await writeFile(
    config,
    `operator: ${op}
system_account: ${system.getPublicKey()}
resolver: MEMORY
resolver_preload: {
  ${system.getPublicKey()}: ${sys}
  ${account.getPublicKey()}: ${acc}
  ${other.getPublicKey()}: ${otherAcc}
}
`,
  );
  const credsOf = async (signer: KeyPair, file: string): Promise<string> => {
    const user = createUser();
    const userJwt = jwt(signer, user.getPublicKey(), 'toolwire', { type: 'user', pub: {}, sub: {}, subs: -1, data: -1, payload: -1 });
    const path = join(dir, file);
    await writeFile(
      path,
      `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${Buffer.from(user.getSeed()).toString()}\n------END USER NKEY SEED------\n`,
      { mode: 0o600 },
    );
    return path;
  };
  return { config, creds: await credsOf(account, 'toolwire.creds'), strangerCreds: await credsOf(other, 'stranger.creds') };
}
