/**
 * The local credentials file `toolwire serve` writes when it starts on its embedded default, so a
 * tool host and the `tools`/`call` commands on the same machine find the server without flags.
 *
 * Path: `$TOOLWIRE_HOME/credentials.json`, default `~/.toolwire/credentials.json`; mode 0600 (readable
 * only by the user), written to a temp file then renamed.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readRegularFile } from './regular-file.js';

/** Contents of the local credentials file. URLs are `ws://` for hosts and `http://…/mcp` for callers. */
export interface LocalCredentials {
  /** WebSocket URL tool hosts dial, e.g. `ws://127.0.0.1:7700`. */
  server: string;
  /** MCP door URL, e.g. `http://127.0.0.1:7700/mcp`. */
  mcp: string;
  /** The address the server listens on (`--listen`), e.g. `{ host: '127.0.0.1', port: 7700 }`; absent in files of older versions. */
  listen?: { host: string; port: number };
  host: { name: string; token: string };
  caller: { name: string; token: string };
}

/** Directory of the credentials file: `$TOOLWIRE_HOME` or `~/.toolwire`. */
export function toolwireHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.TOOLWIRE_HOME && env.TOOLWIRE_HOME.length > 0 ? env.TOOLWIRE_HOME : join(homedir(), '.toolwire');
}

/** Full path of the credentials file. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(toolwireHome(env), 'credentials.json');
}

/** Write the file with mode 0600 (directory 0700), atomically (temp file + rename). */
export async function writeLocalCredentials(creds: LocalCredentials, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = toolwireHome(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = credentialsPath(env);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, path);
  return path;
}

/** A `checkMode` that refuses a file group or others may read or write. */
function refuseShared(mode: number): void {
  if ((mode & 0o077) !== 0) throw new Error('group or others may read or write it');
}

/** Longest credentials file read, bytes (it holds two URLs and two tokens). */
export const MAX_CREDENTIALS_FILE_BYTES = 64 * 1024;

/**
 * Read the file; `undefined` when it does not exist, is not a regular file (a FIFO is not waited
 * on), is over {@link MAX_CREDENTIALS_FILE_BYTES}, or is not a credentials object.
 * @param options.private also `undefined` when group or others may read or write it (mode & 0o077),
 *   as for a `--token-file`: what the commands that send its tokens ask (`endpoint.ts`); `serve`,
 *   which rewrites it with mode 0600, reads it whatever its mode.
 */
export async function readLocalCredentials(env: NodeJS.ProcessEnv = process.env, options: { private?: boolean } = {}): Promise<LocalCredentials | undefined> {
  let text: string;
  try {
    const read = await readRegularFile(credentialsPath(env), MAX_CREDENTIALS_FILE_BYTES, options.private === true ? refuseShared : undefined);
    if (typeof read === 'string') return undefined;
    text = read.toString('utf8');
  } catch {
    return undefined;
  }
  try {
    const value = JSON.parse(text) as Partial<LocalCredentials>;
    if (typeof value.server === 'string' && typeof value.mcp === 'string' && value.host && value.caller) return value as LocalCredentials;
  } catch {
    // fall through: a corrupt file is treated as absent
  }
  return undefined;
}
