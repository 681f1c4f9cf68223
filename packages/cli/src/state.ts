/**
 * The server's state folder: credentials that last across restarts, kept as token digests only.
 *
 * Folder: `serve --state-dir DIR` / `token --state-dir DIR`, else `$TOOLWIRE_HOME`, else
 * `~/.toolwire/` (the folder of the local credentials file), created with mode 0700. In it:
 * - `tokens.json` (0600) — `{"schema": 1, "credentials": [{name, role, tokenDigest, grant?, created}]}`:
 *   every host and caller credential, each with the SHA-256 digest of its token (lowercase hex), never
 *   the token. Written by `toolwire token` and, on first start, by `toolwire serve`.
 * - `last-seen.json` (0600) — `{"<role>:<name>": "<ISO time>"}`: when each identity last
 *   authenticated; written by `toolwire serve` only (at most once a minute, and at shutdown), so
 *   it never races `toolwire token` over `tokens.json`.
 *
 * Every write goes to a temp file in the folder, then is renamed over the old one: a reader sees
 * the old file or the new one, never half of one. Names are unique across both roles (`token revoke
 * NAME` needs no role) and match `[A-Za-z0-9_-]{1,64}`.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ExitCode, type ExitCodeValue } from '@toolwire/protocol/constants';
import type { CallerCredential, HostCredential } from '@toolwire/server';

/** The name of the credentials file in the state folder. */
export const TOKENS_FILE = 'tokens.json';
/** The name of the last-seen file in the state folder. */
export const LAST_SEEN_FILE = 'last-seen.json';
/** Largest `tokens.json` read, bytes (about 10000 credentials). */
export const MAX_STATE_BYTES = 4 * 1024 * 1024;
/** Credential names: `[A-Za-z0-9_-]{1,64}` (DESIGN §2; a host name also has no `__`). */
export const CREDENTIAL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export type Role = 'host' | 'caller';

/** One stored credential. */
export interface StoredCredential {
  name: string;
  role: Role;
  /** SHA-256 of the token's UTF-8 bytes, lowercase hex. */
  tokenDigest: string;
  /** Callers only: callable tool names, `["*"]` for all. */
  grant?: string[];
  /** When it was made, ISO-8601. */
  created: string;
}

export interface StateFile {
  schema: 1;
  credentials: StoredCredential[];
}

/** A state folder problem: one line for the user and the exit status that fits (sysexits). */
export class StateError extends Error {
  override readonly name = 'StateError';
  constructor(
    message: string,
    readonly exitCode: ExitCodeValue,
  ) {
    super(message);
  }
}

/** SHA-256 of `token` (UTF-8), lowercase hex: the form the state folder and `tokenDigest` use. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** What is wrong with `name` as a credential name of `role`, or `undefined` when it is good. */
export function nameProblem(name: string, role: Role): string | undefined {
  if (!CREDENTIAL_NAME.test(name)) return `name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(name)}`;
  if (role === 'host' && name.includes('__')) return `a host name must not contain "__" (it separates <host>__<tool>), got "${name}"`;
  return undefined;
}

function fsError(error: unknown, what: string): StateError {
  const code = (error as { code?: unknown } | undefined)?.code;
  const why = error instanceof Error ? error.message : String(error);
  if (code === 'EACCES' || code === 'EPERM') return new StateError(`${what}: permission denied`, ExitCode.NO_PERM);
  if (code === 'ENOTDIR' || code === 'EEXIST') return new StateError(`${what}: not a folder`, ExitCode.CANT_CREATE);
  return new StateError(`${what}: ${why}`, ExitCode.CANT_CREATE);
}

/** Create `dir` (mode 0700, parents too) unless it exists; it must be a folder. @throws StateError (73, 77) */
export async function ensureStateDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw fsError(error, `state folder ${dir}`);
  }
  const info = await stat(dir).catch((error: unknown) => {
    throw fsError(error, `state folder ${dir}`);
  });
  if (!info.isDirectory()) throw new StateError(`state folder ${dir}: not a folder`, ExitCode.CANT_CREATE);
}

function isStored(value: unknown): value is StoredCredential {
  const c = value as Partial<StoredCredential> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.name === 'string' &&
    (c.role === 'host' || c.role === 'caller') &&
    nameProblem(c.name, c.role) === undefined &&
    typeof c.tokenDigest === 'string' &&
    /^[0-9a-f]{64}$/.test(c.tokenDigest) &&
    typeof c.created === 'string' &&
    (c.grant === undefined || (Array.isArray(c.grant) && c.grant.every((g) => typeof g === 'string' && g.length > 0)))
  );
}

/** Parse the text of `tokens.json`. @throws StateError (65) naming what is wrong */
export function parseState(text: string, path: string): StateFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StateError(`${path}: not JSON (${error instanceof Error ? error.message : String(error)})`, ExitCode.DATA_ERR);
  }
  const v = value as Partial<StateFile> | null;
  if (typeof v !== 'object' || v === null || v.schema !== 1 || !Array.isArray(v.credentials)) {
    throw new StateError(`${path}: not a toolwire state file ({"schema": 1, "credentials": [...]})`, ExitCode.DATA_ERR);
  }
  const names = new Set<string>();
  v.credentials.forEach((c: unknown, i) => {
    if (!isStored(c)) throw new StateError(`${path}: credentials[${i}] is not a {name, role, tokenDigest, created, grant?} entry`, ExitCode.DATA_ERR);
    if (names.has(c.name)) throw new StateError(`${path}: the name "${c.name}" is given twice`, ExitCode.DATA_ERR);
    names.add(c.name);
  });
  return { schema: 1, credentials: v.credentials };
}

/** Read `DIR/tokens.json`; an absent file is an empty state. @throws StateError (65, 73, 77) */
export async function readState(dir: string): Promise<StateFile> {
  const path = join(dir, TOKENS_FILE);
  let text: string;
  try {
    const info = await stat(path);
    if (info.size > MAX_STATE_BYTES) throw new StateError(`${path}: larger than ${MAX_STATE_BYTES} bytes`, ExitCode.DATA_ERR);
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof StateError) throw error;
    if ((error as { code?: unknown }).code === 'ENOENT') return { schema: 1, credentials: [] };
    throw fsError(error, path);
  }
  return parseState(text, path);
}

/** Write `DIR/<file>` with mode 0600: a temp file in `dir`, then a rename over the old one. @throws StateError (73, 77) */
async function writeAtomic(dir: string, file: string, value: unknown): Promise<void> {
  const path = join(dir, file);
  const tmp = join(dir, `.${file}.${process.pid}.${Date.now()}.tmp`);
  try {
    await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw fsError(error, path);
  }
}

/** Replace `DIR/tokens.json` with `state` (atomically, 0600). */
export function writeState(dir: string, state: StateFile): Promise<void> {
  return writeAtomic(dir, TOKENS_FILE, state);
}

/** Read `DIR/last-seen.json`: `"<role>:<name>"` → ISO time; absent or unreadable → empty. */
export async function readLastSeen(dir: string): Promise<Record<string, string>> {
  try {
    const value = JSON.parse(await readFile(join(dir, LAST_SEEN_FILE), 'utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/** Replace `DIR/last-seen.json` (atomically, 0600). */
export function writeLastSeen(dir: string, seen: Record<string, string>): Promise<void> {
  return writeAtomic(dir, LAST_SEEN_FILE, seen);
}

/** The stored credentials as server credentials (digests only). */
export function serverCredentials(state: StateFile): { hosts: HostCredential[]; callers: CallerCredential[] } {
  const hosts: HostCredential[] = [];
  const callers: CallerCredential[] = [];
  for (const c of state.credentials) {
    if (c.role === 'host') hosts.push({ name: c.name, tokenDigest: c.tokenDigest });
    else callers.push({ name: c.name, tokenDigest: c.tokenDigest, grant: c.grant ?? ['*'] });
  }
  return { hosts, callers };
}
