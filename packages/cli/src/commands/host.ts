/**
 * `toolwire host` — run a tool host that advertises a manifest's tools until SIGINT/SIGTERM; SIGHUP
 * re-reads the manifest (its flags and the host they build: `host-options.ts`).
 */
import { ExitCode } from '@toolwire/protocol';
import { type HostReplacedError, type ServerRefusedError, TokenRefusedError } from '@toolwire/client';
import { type CliIO, processIO, waitForSignal, write } from '../io.js';
import { type MetricsListener, listenMetrics } from './metrics-listen.js';
import { ignoreHangup, reloadOnHangup } from './host-reload.js';
import { type HostCommandDeps, prepareHost, withoutCredentials } from './host-options.js';

export { hostUsage, type HostCommandDeps } from './host-options.js';

/**
 * `toolwire host …`. Returns the exit status: 0 after SIGINT/SIGTERM (every tool process killed,
 * connection closed 1000), 64 (`USAGE`) for bad flags or a missing server/token, 65 (`DATA_ERR`)
 * for a manifest that cannot be read or is invalid, 69 (`UNAVAILABLE`) when the server closed the
 * connection with 4000 (REPLACED: another host uses the same token; stderr then ends with
 * `toolwire: replaced by a newer connection …`) or refused it for good (HTTP 403, another 4xx, a
 * TLS failure: `toolwire: TLS failure with …`), 77 (`NO_PERM`) when it answered the upgrade with
 * HTTP 401 (`toolwire: the server <url> did not accept this host's token (HTTP 401)`), or with a
 * 429 that challenges the token (its address is throttled for failed authentications), after one
 * attempt.
 */
export async function hostCommand(argv: string[], io: CliIO = processIO(), deps: HostCommandDeps = {}): Promise<number> {
  const prepared = await prepareHost(argv, io, deps);
  if (typeof prepared === 'number') return prepared;
  const { host, logger, metricsAddress, manifest, tools, servers, token, root } = prepared;
  let metricsListener: MetricsListener | undefined;
  if (metricsAddress !== undefined) {
    try {
      metricsListener = await listenMetrics(metricsAddress, () => host.scrapeMetrics());
      logger.info({ url: metricsListener.url }, 'toolwire: metrics listening');
    } catch (error) {
      await host.close();
      await write(io.stderr, `toolwire host: cannot listen on --metrics-listen ${metricsAddress.host}:${metricsAddress.port}: ${(error as Error).message}\n`);
      return ExitCode.UNAVAILABLE;
    }
  }
  if (tools.length === 0 && servers.size === 0) logger.warn({ manifest }, 'toolwire: the manifest has no tools');
  host.on('advertised', (m) => logger.info({ accepted: m.accepted.map((a) => a.as), rejected: m.rejected.length }, 'toolwire: advertised'));
  const stop = waitForSignal(io.signals);
  // SIGHUP re-reads the manifest's tools; MCP servers stay as started (each re-lists its own tools on list_changed).
  const stopReloading =
    manifest !== undefined ? reloadOnHangup(io.signals, host, { manifest, env: withoutCredentials(io.env, token), root }, logger) : ignoreHangup(io.signals, logger);
  // Replaced (close 4000) or refused for good (HTTP 401, 403, another 4xx, TLS): the ToolHost stops
  // reconnecting (and logs why at level error); so does the command.
  const stopped = new Promise<{ error: HostReplacedError | ServerRefusedError }>((resolve) => host.once('stopped', (error) => resolve({ error })));
  // With reconnect on, start() settles only with the first `advertised`, or rejects on close() or a refusal.
  host.start().catch(() => {});
  const outcome = await Promise.race([stop.signal, stopped]);
  stop.dispose();
  if (typeof outcome === 'object') {
    await host.close();
    await metricsListener?.close();
    stopReloading(); // after the close: a SIGHUP meanwhile must not end the process
    await write(io.stderr, `toolwire: ${outcome.error.message}\n`);
    return outcome.error instanceof TokenRefusedError ? ExitCode.NO_PERM : ExitCode.UNAVAILABLE;
  }
  logger.info({ signal: outcome }, 'toolwire: stopping');
  await host.close();
  await metricsListener?.close();
  stopReloading();
  return ExitCode.OK;
}
