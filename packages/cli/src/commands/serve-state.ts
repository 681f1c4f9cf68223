/**
 * `toolwire serve` and its state folder (see `../state.ts`): the embedded default's lasting `local`
 * host and `cli` caller, the watch that applies `toolwire token` changes to the running server, and
 * the last-seen record.
 *
 * How a change reaches the server (README "Tokens"): `toolwire token` rewrites `tokens.json`
 * (temp file + rename); the server watches the folder (`fs.watch`, debounced by
 * {@link STATE_DEBOUNCE_MS}) and also stats the file every {@link STATE_POLL_MS} (for file systems
 * where `fs.watch` reports nothing, e.g. some network mounts), re-reads it when it changed and
 * applies it with `updateCredentials` — so a revoked host is closed (1008, its calls 69) within
 * about half a second, with no signal, socket or admin endpoint. A file that does not parse is
 * logged and the credentials in force stay.
 */
import { type FSWatcher, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type CallerCredential, type HostCredential, type ToolwireServer, generateToken } from '@toolwire/server';
import type { pino } from 'pino';
import { readLocalCredentials } from '../credentials.js';
import {
  LAST_SEEN_FILE,
  type StateFile,
  StateError,
  TOKENS_FILE,
  ensureStateDir,
  parseState,
  readLastSeen,
  readState,
  tokenDigest,
  withStateLock,
  writeLastSeen,
  writeState,
} from '../state.js';

/** Debounce of `fs.watch` events before `tokens.json` is re-read, ms. */
export const STATE_DEBOUNCE_MS = 50;
/** How often `tokens.json` is stat'ed in case `fs.watch` missed a change, ms. */
export const STATE_POLL_MS = 500;
/** How often `last-seen.json` is rewritten while the server runs (and once at shutdown), ms. */
export const LAST_SEEN_FLUSH_MS = 60_000;

/** Generate a bearer token (`@toolwire/server`'s: 24 random bytes, base64url, never a leading `-`). */
export { generateToken };

/** The embedded default's credentials in clear (for the banner and the local credentials file). */
export interface EmbeddedCredentials {
  host: { name: string; token: string };
  caller: { name: string; token: string };
  /** True when either was made now (first start, or the local credentials file no longer matched). */
  made: boolean;
  state: StateFile;
}

/**
 * Make sure the state folder holds a host `local` and a caller `cli` (grant `*`) whose tokens the
 * local credentials file (`DIR/credentials.json`) holds in clear: reuse them when their digests
 * match, else make new ones (replacing a stored `local`/`cli`) and write `tokens.json`.
 * @throws StateError
 */
export async function embeddedCredentials(dir: string): Promise<EmbeddedCredentials> {
  await ensureStateDir(dir);
  return withStateLock(dir, () => embed(dir));
}

async function embed(dir: string): Promise<EmbeddedCredentials> {
  let state = await readState(dir);
  const local = await readLocalCredentials({ TOOLWIRE_HOME: dir });
  const stored = (name: string, role: 'host' | 'caller', token: string | undefined): boolean =>
    typeof token === 'string' && state.credentials.some((c) => c.name === name && c.role === role && c.tokenDigest === tokenDigest(token));
  let made = false;
  const ensure = (name: string, role: 'host' | 'caller', token: string | undefined): string => {
    if (stored(name, role, token)) return token!;
    const fresh = generateToken();
    const entry = { name, role, tokenDigest: tokenDigest(fresh), created: new Date().toISOString(), ...(role === 'caller' && { grant: ['*'] }) };
    state = { schema: 1, credentials: [...state.credentials.filter((c) => c.name !== name), entry] };
    made = true;
    return fresh;
  };
  const hostToken = ensure('local', 'host', local?.host.name === 'local' ? local.host.token : undefined);
  const callerToken = ensure('cli', 'caller', local?.caller.name === 'cli' ? local.caller.token : undefined);
  if (made) await writeState(dir, state);
  return { host: { name: 'local', token: hostToken }, caller: { name: 'cli', token: callerToken }, made, state };
}

/** Config credentials plus the state's, where the config wins: a stored name the config names (in either role) is left out. */
export function mergeCredentials(
  config: { hosts: readonly HostCredential[]; callers: readonly CallerCredential[] } | undefined,
  state: { hosts: HostCredential[]; callers: CallerCredential[] },
): { hosts: HostCredential[]; callers: CallerCredential[] } {
  if (config === undefined) return state;
  const named = new Set([...config.hosts, ...config.callers].map((c) => c.name));
  return {
    hosts: [...config.hosts, ...state.hosts.filter((c) => !named.has(c.name))],
    callers: [...config.callers, ...state.callers.filter((c) => !named.has(c.name))],
  };
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return '';
    throw error;
  }
}

/**
 * Watch `DIR/tokens.json` and call `apply` with each new state (never two at once, never for an
 * unchanged file). Returns a function that stops watching (timers cleared, watcher closed).
 */
export function watchState(dir: string, apply: (state: StateFile) => Promise<void>, logger: pino.Logger): () => void {
  const path = join(dir, TOKENS_FILE);
  let last: string | undefined;
  let lastStat = '';
  let chain = Promise.resolve();
  let debounce: NodeJS.Timeout | undefined;
  let stopped = false;
  const reload = async (): Promise<void> => {
    if (stopped) return;
    let text: string;
    try {
      text = await readText(path);
    } catch (error) {
      logger.error({ path, err: error instanceof Error ? error.message : String(error) }, 'cannot read the state file; the credentials in force stay');
      return;
    }
    if (text === last) return;
    last = text;
    try {
      await apply(text === '' ? { schema: 1, credentials: [] } : parseState(text, path));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      logger.error({ path, err: why }, 'state file not applied; the credentials in force stay');
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      chain = chain.then(reload);
    }, STATE_DEBOUNCE_MS);
  };
  // The first read only records what is in force (the server was built from it).
  chain = readText(path).then(
    (text) => void (last = text),
    () => undefined,
  );
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, (_event, file) => {
      if (file === null || file === TOKENS_FILE) schedule();
    });
    watcher.on('error', (error) => logger.warn({ dir, err: error.message }, 'state folder watch failed; polling only'));
  } catch (error) {
    logger.warn({ dir, err: error instanceof Error ? error.message : String(error) }, 'cannot watch the state folder; polling only');
  }
  const poll = setInterval(() => {
    stat(path).then(
      (s) => {
        const now = `${s.ino}:${s.size}:${s.mtimeMs}`;
        if (now !== lastStat) {
          if (lastStat !== '') schedule();
          lastStat = now;
        }
      },
      () => {
        if (lastStat !== 'absent' && lastStat !== '') schedule();
        lastStat = 'absent';
      },
    );
  }, STATE_POLL_MS);
  return () => {
    stopped = true;
    clearTimeout(debounce);
    clearInterval(poll);
    watcher?.close();
  };
}

/**
 * Record when identities were last seen in `DIR/last-seen.json`: those that authenticated since the
 * last write, and hosts connected now. Written every {@link LAST_SEEN_FLUSH_MS} when something
 * changed, and by the returned `flush` (at shutdown). A failed write is logged.
 */
export function recordLastSeen(dir: string, server: ToolwireServer, logger: pino.Logger): { flush: () => Promise<void>; dispose: () => void } {
  let written: Record<string, string> | undefined;
  const flush = async (): Promise<void> => {
    written ??= await readLastSeen(dir);
    const next = { ...written };
    for (const [key, ms] of server.tokens.lastSeen()) next[key] = new Date(ms).toISOString();
    const now = new Date().toISOString();
    for (const host of server.router.hosts()) next[`host:${host.name}`] = now;
    if (JSON.stringify(next) === JSON.stringify(written)) return;
    try {
      await writeLastSeen(dir, next);
      written = next;
    } catch (error) {
      logger.warn({ file: join(dir, LAST_SEEN_FILE), err: error instanceof StateError ? error.message : String(error) }, 'cannot write the last-seen file');
    }
  };
  const timer = setInterval(() => void flush(), LAST_SEEN_FLUSH_MS);
  timer.unref();
  return { flush, dispose: () => clearInterval(timer) };
}
