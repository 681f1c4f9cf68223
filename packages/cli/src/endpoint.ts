/**
 * Where a CLI command connects and with which token: flags, then `TOOLWIRE_SERVER` /
 * `TOOLWIRE_TOKEN` (a host also `--token-file` / `TOOLWIRE_TOKEN_FILE`), then the local
 * credentials file `toolwire serve` writes.
 */
import { statSync } from 'node:fs';
import { type LocalCredentials, credentialsPath, readLocalCredentials } from './credentials.js';
import { quotedArg } from './terminal-text.js';
import { UNSENDABLE_TOKEN, readTokenFile } from './token-file.js';

/** Which half of the credentials file applies: a tool host (`.server`, `.host.token`) or a caller (`.mcp`, `.caller.token`). */
export type Role = 'host' | 'caller';

export interface Endpoint {
  server: string | undefined;
  token: string | undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.length > 0 ? value : undefined;
}

/** The flags {@link resolveEndpoint} reads; `tokenFile` (`--token-file`) is a host's only. */
export interface EndpointFlags extends Partial<Endpoint> {
  tokenFile?: string | undefined;
}

/**
 * Fill `server` and `token`, each independently: the flag; else `TOOLWIRE_SERVER` /
 * `TOOLWIRE_TOKEN`; else the local credentials file (read only when something is still missing).
 * A host's token: `--token`, then `--token-file`, then `TOOLWIRE_TOKEN`, then `TOOLWIRE_TOKEN_FILE`,
 * then the credentials file; the first one given is used (a token file is read only then).
 *
 * @throws TokenFileError (66 or 77) for a token file that is missing, unreadable or open to group/others
 */
export async function resolveEndpoint(role: Role, flags: EndpointFlags, env: NodeJS.ProcessEnv): Promise<Endpoint> {
  let server = nonEmpty(flags.server) ?? nonEmpty(env.TOOLWIRE_SERVER);
  let token = nonEmpty(flags.token);
  const tokenFile = nonEmpty(flags.tokenFile);
  if (token === undefined && role === 'host' && tokenFile !== undefined) token = await readTokenFile(tokenFile, '--token-file');
  token ??= nonEmpty(env.TOOLWIRE_TOKEN);
  const envFile = nonEmpty(env.TOOLWIRE_TOKEN_FILE);
  if (token === undefined && role === 'host' && envFile !== undefined) token = await readTokenFile(envFile, '$TOOLWIRE_TOKEN_FILE');
  if (server === undefined || token === undefined) {
    const creds: LocalCredentials | undefined = await readLocalCredentials(env, { private: true });
    if (creds) {
      server ??= role === 'host' ? creds.server : creds.mcp;
      token ??= role === 'host' ? creds.host?.token : creds.caller?.token;
    }
  }
  return { server, token };
}

/**
 * `server` with `<scheme>://` put in front when it names none: `127.0.0.1:7700` →
 * `ws://127.0.0.1:7700` for a host, `http://127.0.0.1:7700` for a caller. A given scheme (`wss://`,
 * `https://`…) is kept, with its default port when it names none (as curl does).
 *
 * @throws TypeError for a `server` with neither a scheme nor a port (`127.0.0.1`): toolwire has no default port to dial
 */
export function withDefaultScheme(server: string, scheme: 'ws' | 'http'): string {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(server)) return server;
  // HOST:PORT (HOST a name, an IPv4 address or a [bracketed] IPv6 address), then an optional path.
  if (!/^(?:\[[^\]/]*\]|[^\s/?#[\]:]+):\d+(?:[/?#]|$)/.test(server)) {
    throw new TypeError(`has no port: write HOST:PORT (e.g. 127.0.0.1:7700) or a URL with a scheme, got ${quotedArg(server)}`);
  }
  return `${scheme}://${server}`;
}

/**
 * The usage error for a missing server or token, naming every place looked at (a host's token also has the
 * token-file ways), and the credentials file that is there but is not one (corrupt, or not written by serve).
 */
export function missingEndpointMessage(what: 'server' | 'token', env: NodeJS.ProcessEnv, role: Role = 'caller'): string {
  const files = what === 'token' && role === 'host';
  const flag = what === 'server' ? '--server' : files ? '--token or --token-file' : '--token';
  const variable = what === 'server' ? 'TOOLWIRE_SERVER' : files ? 'TOOLWIRE_TOKEN or TOOLWIRE_TOKEN_FILE' : 'TOOLWIRE_TOKEN';
  const path = credentialsPath(env);
  // There but unusable (readLocalCredentials treats it as absent): say why, rather than "run serve to write it".
  const st = statSync(path, { throwIfNoEntry: false });
  if (st !== undefined && st.isFile() && (st.mode & 0o077) !== 0) {
    return `toolwire: no ${what}: give ${flag}, set ${variable}, or fix ${path}: group or others may read or write it (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); run: chmod 600 ${path}\n`;
  }
  if (st !== undefined) {
    return `toolwire: no ${what}: give ${flag}, set ${variable}, or fix ${path}: it is not a credentials file (not a regular file of at most 64 KiB holding JSON with server, mcp, host and caller; "toolwire serve" here writes a new one)\n`;
  }
  return `toolwire: no ${what}: give ${flag}, set ${variable}, or run "toolwire serve" here to write ${path}\n`;
}

/**
 * The usage error for a token that cannot travel as `Authorization: Bearer <token>` (whitespace, a
 * control character, a character past U+00FF), else undefined. Names where it came from, never the token.
 */
export function unsendableTokenMessage(token: string): string | undefined {
  if (!UNSENDABLE_TOKEN.test(token)) return undefined;
  return 'toolwire: the token must not hold whitespace or control characters (it travels as "Bearer <token>"); check --token, $TOOLWIRE_TOKEN or the credentials file\n';
}
