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
 * the old file or the new one, never half of one. A read-change-write of `tokens.json` holds the
 * folder's lock (`tokens.lock`, made with O_EXCL, holding the holder's pid; a lock whose holder is no
 * longer running is stale and removed), so two `toolwire token` commands at the same instant both
 * land. (Not proper-lockfile: it installs process-wide signal handlers through signal-exit when
 * imported, which would change how `toolwire serve` and `host` answer SIGHUP.) Names are unique across both roles (`token revoke
 * NAME` needs no role) and match `[A-Za-z0-9_-]{1,64}`.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ExitCode, type ExitCodeValue } from '@toolwire/protocol/constants';
import type { CallerCredential, HostCredential } from '@toolwire/server';
import { readRegularFile } from './regular-file.js';
import { quotedArg } from './terminal-text.js';

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
  if (!CREDENTIAL_NAME.test(name)) return `name must match [A-Za-z0-9_-]{1,64}, got ${quotedArg(name)}`;
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

/**
 * Create `dir` (mode 0700, parents too) unless it exists; it must be a folder. Resolves `true` when
 * it made the folder. @throws StateError (73, 77)
 */
export async function ensureStateDir(dir: string): Promise<boolean> {
  let made: string | undefined;
  try {
    made = await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw fsError(error, `state folder ${dir}`);
  }
  await requireStateDir(dir);
  return made !== undefined;
}

/** `dir` must exist and be a folder (nothing is created). @throws StateError (66 absent, 73 not a folder, 77) */
export async function requireStateDir(dir: string): Promise<void> {
  const info = await stat(dir).catch((error: unknown) => {
    if ((error as { code?: unknown }).code === 'ENOENT') {
      throw new StateError(`no state folder at ${dir} (toolwire serve or toolwire token add makes it; check --state-dir)`, ExitCode.NO_INPUT);
    }
    throw fsError(error, `state folder ${dir}`);
  });
  if (!info.isDirectory()) throw new StateError(`state folder ${dir}: not a folder`, ExitCode.CANT_CREATE);
}

/** How long a read-change-write of `tokens.json` waits for the folder's lock, ms. */
export const STATE_LOCK_WAIT_MS = 10_000;
/** The lock file in the state folder. */
export const LOCK_FILE = 'tokens.lock';

/** Is the process `pid` running (on this machine)? */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM';
  }
}

/** Take `DIR/tokens.lock` (O_EXCL), removing a stale one; `false` when another live process holds it. */
async function tryLock(path: string): Promise<boolean> {
  try {
    const file = await open(path, 'wx', 0o600);
    await file.writeFile(`${process.pid}\n`).finally(() => file.close());
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
  }
  const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
  // A holder that is gone (killed mid-change) left the lock behind; an empty file is a lock being written.
  if (Number.isInteger(holder) && holder > 0 && !running(holder)) await rm(path, { force: true });
  return false;
}

/**
 * Run `change` holding the state folder's lock (`DIR/tokens.lock`): two read-change-writes of
 * `tokens.json` by two processes at once never lose an update. Waits up to
 * {@link STATE_LOCK_WAIT_MS} for another holder. @throws StateError (75 when the lock stays held; 73, 77)
 */
export async function withStateLock<T>(dir: string, change: () => Promise<T>): Promise<T> {
  const path = join(dir, LOCK_FILE);
  const until = Date.now() + STATE_LOCK_WAIT_MS;
  try {
    while (!(await tryLock(path))) {
      if (Date.now() >= until) throw new StateError(`state folder ${dir} is locked by another toolwire command (${path}); try again`, ExitCode.TEMPFAIL);
      await delay(20 + Math.random() * 30);
    }
  } catch (error) {
    if (error instanceof StateError) throw error;
    throw fsError(error, `state folder ${dir}`);
  }
  try {
    return await change();
  } finally {
    await rm(path, { force: true }).catch(() => undefined);
  }
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
    // A FIFO or device is refused, not waited on or read without end (regular-file.ts).
    const read = await readRegularFile(path, MAX_STATE_BYTES);
    if (read === 'not a regular file') throw new StateError(`${path}: not a regular file`, ExitCode.DATA_ERR);
    if (read === 'too large') throw new StateError(`${path}: larger than ${MAX_STATE_BYTES} bytes`, ExitCode.DATA_ERR);
    text = read.toString('utf8');
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
    const read = await readRegularFile(join(dir, LAST_SEEN_FILE), MAX_STATE_BYTES);
    if (typeof read === 'string') return {}; // not a regular file, or too large: as unreadable
    const value = JSON.parse(read.toString('utf8')) as unknown;
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
