/**
 * Where a CLI command connects and with which token: flags, then `TOOLWIRE_SERVER` /
 * `TOOLWIRE_TOKEN`, then the local credentials file `toolwire serve` writes.
 */
import { type LocalCredentials, credentialsPath, readLocalCredentials } from './credentials.js';

/** Which half of the credentials file applies: a tool host (`.server`, `.host.token`) or a caller (`.mcp`, `.caller.token`). */
export type Role = 'host' | 'caller';

export interface Endpoint {
  server: string | undefined;
  token: string | undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.length > 0 ? value : undefined;
}

/**
 * Fill `server` and `token`, each independently: the flag; else `TOOLWIRE_SERVER` /
 * `TOOLWIRE_TOKEN`; else the local credentials file (read only when something is still missing).
 */
export async function resolveEndpoint(role: Role, flags: Partial<Endpoint>, env: NodeJS.ProcessEnv): Promise<Endpoint> {
  let server = nonEmpty(flags.server) ?? nonEmpty(env.TOOLWIRE_SERVER);
  let token = nonEmpty(flags.token) ?? nonEmpty(env.TOOLWIRE_TOKEN);
  if (server === undefined || token === undefined) {
    const creds: LocalCredentials | undefined = await readLocalCredentials(env);
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
 * `https://`…) is kept.
 */
export function withDefaultScheme(server: string, scheme: 'ws' | 'http'): string {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(server) ? server : `${scheme}://${server}`;
}

/** The usage error for a missing server or token, naming every place looked at. */
export function missingEndpointMessage(what: 'server' | 'token', env: NodeJS.ProcessEnv): string {
  const flag = what === 'server' ? '--server' : '--token';
  const variable = what === 'server' ? 'TOOLWIRE_SERVER' : 'TOOLWIRE_TOKEN';
  return `toolwire: no ${what}: give ${flag}, set ${variable}, or run "toolwire serve" here to write ${credentialsPath(env)}\n`;
}
