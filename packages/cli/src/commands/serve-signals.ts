/**
 * What `toolwire serve` does on process signals: SIGHUP reloads the config's credentials (or is
 * logged and ignored without a config), SIGINT/SIGTERM (or an abort signal) stop the server; and a
 * changed state folder is applied to the running server.
 */
import type { pino } from 'pino';
import type { CallerCredential, HostCredential, ToolwireServer } from '@toolwire/server';
import { type StateFile, readState, serverCredentials } from '../state.js';
import { loadConfig } from './serve-config.js';
import { mergeCredentials } from './serve-state.js';

/**
 * Without a config there is nothing to reload: SIGHUP (which would end the process) is logged and
 * ignored. Returns a function that removes the listener.
 */
export function ignoreHangup(logger: pino.Logger): () => void {
  const onHup = (): void => logger.warn('SIGHUP ignored: nothing to reload without --config');
  process.on('SIGHUP', onHup);
  return () => process.off('SIGHUP', onHup);
}

/**
 * On SIGHUP, reload `configPath` and apply its credentials to `server`. Returns a function that
 * removes the listener. A reload in progress makes later SIGHUPs wait their turn (never two at once).
 */
export function watchReload(
  configPath: string,
  server: ToolwireServer,
  logger: pino.Logger,
  env: NodeJS.ProcessEnv | undefined,
  state: StateLink | undefined,
): () => void {
  let chain = Promise.resolve();
  const reload = async (): Promise<void> => {
    try {
      const config = await loadConfig(configPath, env);
      const merged = state === undefined ? config : mergeCredentials(config, serverCredentials(await readState(state.dir)));
      const { closedHosts, closedCallers } = await server.updateCredentials(merged.hosts, merged.callers);
      if (state) state.config = config;
      logger.info({ config: configPath, hosts: config.hosts.length, callers: config.callers.length, closedHosts, closedCallers }, 'config reloaded');
    } catch (error) {
      logger.error(
        { config: configPath, err: error instanceof Error ? error.message : String(error) },
        'config reload failed; the previous credentials stay in force',
      );
    }
  };
  const onHup = (): void => {
    chain = chain.then(reload);
  };
  process.on('SIGHUP', onHup);
  return () => process.off('SIGHUP', onHup);
}

/** Apply a changed `tokens.json` to `server` (the config's credentials win); a credential set the server refuses is logged by the caller. */
export async function applyState(server: ToolwireServer, link: StateLink, next: StateFile, logger: pino.Logger): Promise<void> {
  const merged = mergeCredentials(link.config, serverCredentials(next));
  const { closedHosts, closedCallers } = await server.updateCredentials(merged.hosts, merged.callers);
  logger.info({ stateDir: link.dir, hosts: merged.hosts.length, callers: merged.callers.length, closedHosts, closedCallers }, 'state folder reloaded');
}

/** The state folder a server runs on, and the config credentials that win over it (with `--config`). */
export interface StateLink {
  dir: string;
  config: { hosts: HostCredential[]; callers: CallerCredential[] } | undefined;
}

/**
 * Watch for SIGINT, SIGTERM or `signal`: `stopped` resolves with which one came first. Attached
 * before the server listens, so a signal sent right after the banner is never missed. `dispose()`
 * removes the listeners (done automatically on the first stop).
 */
export function watchStop(signal: AbortSignal | undefined): { stopped: Promise<string>; dispose: () => void } {
  let resolveStopped!: (why: string) => void;
  const stopped = new Promise<string>((resolve) => (resolveStopped = resolve));
  const onInt = (): void => done('SIGINT');
  const onTerm = (): void => done('SIGTERM');
  const onAbort = (): void => done('abort');
  const dispose = (): void => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    signal?.removeEventListener('abort', onAbort);
  };
  function done(why: string): void {
    dispose();
    resolveStopped(why);
  }
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  if (signal?.aborted) done('abort');
  else signal?.addEventListener('abort', onAbort, { once: true });
  return { stopped, dispose };
}
