/**
 * `toolwire serve` — run the central server until SIGINT/SIGTERM, then close it cleanly (its flags
 * and the server they build: `serve-options.ts`).
 *
 * ```text
 * toolwire serve [--listen HOST:PORT] [--config FILE] [--tls-cert FILE --tls-key FILE] [--log-level LEVEL] [--help]
 * ```
 * - `--listen` — address to bind, default `127.0.0.1:7700` (or the config's `listen`);
 * - `--config` — JSON config file (see `config.ts`); without it the **embedded default** runs on
 *   the state folder (`../state.ts`): every credential `toolwire token` made, plus one host `local`
 *   and one caller `cli` made on the first start (`crypto.randomBytes(24)`, base64url) and reused
 *   after; their tokens are printed on stdout by the start that made them (later starts name the
 *   file instead: a token is shown once) and written to the local credentials file
 *   (`<state folder>/credentials.json`, mode 0600). With a config the file is written only when the
 *   config says `"writeCredentials": true`;
 * - `--state-dir` — the state folder, default `$TOOLWIRE_HOME`, else `~/.toolwire` (created 0700).
 *   With `--config` the state folder is used only when `--state-dir` is given; the config's
 *   credentials then win over stored ones of the same name. Changes to its `tokens.json` (by
 *   `toolwire token`) apply to the running server within 1 s (see `serve-state.ts`);
 * - `--tls-cert`, `--tls-key` — PEM certificate (chain) and private key: serve `wss://` and
 *   `https://…/mcp` (both flags or neither; they win over the config's `tlsCert`/`tlsKey`);
 * - `--log-level` — pino level on stderr: fatal, error, warn, info (default), debug, trace, silent;
 * - `--log-format` — `pretty` (pino-pretty) or `json` (pino's JSON lines); default pretty on a TTY, else json;
 * - `--metrics-listen` — also serve `GET /metrics` without a token on this address (`metrics-listen.ts`).
 *
 * With `--config`, SIGHUP reloads the config file's `hosts` and `callers` (token rotation without
 * a restart): sessions of removed or changed tokens are closed (host calls settle 69); a file that
 * does not load is logged and the old credentials stay. Other keys need a restart.
 *
 * A "listening" banner with the URLs goes to stdout. Listening on an address other than loopback
 * without TLS prints a warning on stderr: tokens and tool output then travel in the clear. Exit
 * status: 0 after a clean shutdown (and for `--help`); 64 (EX_USAGE) for bad flags, a bad
 * `--listen`, or a bad config file or credential; 69 (EX_UNAVAILABLE) when the address cannot be
 * bound (`port in use, try --listen HOST:PORT` for EADDRINUSE); 65, 73 or 77 when the state folder
 * cannot be used (a bad `tokens.json`; not a folder or not writable; permission denied).
 */
import { ExitCode } from '@toolwire/protocol';
import { writeLocalCredentials } from '../credentials.js';
import { applyState, ignoreHangup, watchReload, watchStop } from './serve-signals.js';
import { isLoopback } from '../loopback.js';
import { recordLastSeen, watchState } from './serve-state.js';
import { ClusterError, RecordDirError, type ListenInfo } from '@toolwire/server';
import type { ServeConfig } from './serve-config.js';
import { type MetricsListener, listenMetrics } from './metrics-listen.js';
import { type ServeIo, prepareServe } from './serve-options.js';

export { serveUsage, type ServeIo } from './serve-options.js';
export { generateToken } from './serve-state.js';

/** A host-reachable form of a bound address: a wildcard bind is reached through loopback. */
function reachable(info: ListenInfo): { server: string; mcp: string } {
  const host = info.host === '0.0.0.0' ? '127.0.0.1' : info.host === '::' ? '[::1]' : info.host.includes(':') ? `[${info.host}]` : info.host;
  const s = info.url.startsWith('wss:') ? 's' : '';
  return { server: `ws${s}://${host}:${info.port}`, mcp: `http${s}://${host}:${info.port}/mcp` };
}

/** The config's first host and first caller, for `writeCredentials` (they carry tokens: `loadConfig` resolves every one). */
function firstInClear(config: ServeConfig | undefined): { host: { name: string; token: string }; caller: { name: string; token: string } } | undefined {
  const host = config?.hosts[0];
  const caller = config?.callers[0];
  if (host?.token === undefined || caller?.token === undefined) return undefined;
  return { host: { name: host.name, token: host.token }, caller: { name: caller.name, token: caller.token } };
}

/**
 * Run `toolwire serve` with `argv` (the arguments after `serve`). Resolves with the exit status once
 * the server has stopped (see the module comment).
 */
export async function serveCommand(argv: string[], io: ServeIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const prepared = await prepareServe(argv, io);
  if (typeof prepared === 'number') return prepared;
  const { configFile, config, listen, metricsAddress, tls, stateDir, state, embedded, writeCredentials, logger, server } = prepared;

  const stop = watchStop(io.signal);
  let info: ListenInfo;
  try {
    info = await server.listen(listen.port, listen.host);
  } catch (error) {
    stop.dispose();
    await server.close();
    if (error instanceof ClusterError) {
      stderr.write(`toolwire serve: ${error.message}\n`);
      return ExitCode.UNAVAILABLE;
    }
    if (error instanceof RecordDirError) {
      stderr.write(`toolwire serve: ${error.message}\n`);
      return ExitCode.CANT_CREATE;
    }
    const code = (error as { code?: unknown } | undefined)?.code;
    const why = code === 'EADDRINUSE' ? 'port in use (EADDRINUSE), try --listen HOST:PORT' : error instanceof Error ? error.message : String(error);
    stderr.write(`toolwire serve: cannot listen on ${listen.host}:${listen.port}: ${why}\n`);
    return ExitCode.UNAVAILABLE;
  }
  let metricsListener: MetricsListener | undefined;
  if (metricsAddress !== undefined) {
    try {
      metricsListener = await listenMetrics(metricsAddress, () => server.scrapeMetrics());
    } catch (error) {
      stop.dispose();
      await server.close();
      stderr.write(
        `toolwire serve: cannot listen on --metrics-listen ${metricsAddress.host}:${metricsAddress.port}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      return ExitCode.UNAVAILABLE;
    }
  }
  if (tls === undefined && !isLoopback(listen.host)) {
    stderr.write(
      `toolwire serve: warning: listening on ${listen.host} without TLS: tokens and tool output travel in the clear; ` +
        'give --tls-cert and --tls-key, or listen on 127.0.0.1\n',
    );
  }

  // Before the banner: a SIGHUP sent as soon as the banner is read is never missed.
  const stopReload = configFile !== undefined ? watchReload(configFile, server, logger, io.env, state) : ignoreHangup(logger);
  const stopState = state && watchState(state.dir, (next) => applyState(server, state, next, logger), logger);
  const seen = state && recordLastSeen(state.dir, server, logger);
  // A wildcard bind is reached at any address of this machine: name the loopback one, not 0.0.0.0.
  const near = reachable(info);
  const wildcard = info.host === '0.0.0.0' || info.host === '::';
  const anyAddress = (url: string): string => (wildcard ? `${url.replace(/\/\/[^/]+/, '//<this machine>:' + String(info.port))} (here: ${url})` : url);
  const lines = [
    `toolwire server listening on ${info.host}:${info.port}`,
    `  tool hosts connect to  ${anyAddress(near.server)}`,
    `  MCP callers connect to ${anyAddress(near.mcp)}`,
    `  health                 ${near.mcp.replace(/\/mcp$/, '')}/healthz`,
    `  status page            ${near.mcp.replace(/\/mcp$/, '')}/status (log in as a caller; or: toolwire status)`,
    `  metrics                ${metricsListener?.url ?? `${near.mcp.replace(/\/mcp$/, '')}/metrics (callers only)`}`,
  ];
  if (server.node !== undefined) lines.push(`  cluster node           ${server.node}`);
  if (embedded !== undefined) {
    // A token is shown once, on the start that made it (issue 10): later starts, whose stdout may be
    // a journal or a log file, name where it is kept instead.
    const shown = (token: string): string => (embedded.made ? token : 'in the credentials file below (shown on the start that made it)');
    lines.push(
      `  host token for host "${embedded.host.name}": ${shown(embedded.host.token)}`,
      `  caller token for caller "${embedded.caller.name}": ${shown(embedded.caller.token)}`,
      `  state folder           ${stateDir!} (add a machine: toolwire token add host NAME)`,
    );
  }
  const local = embedded ?? firstInClear(config);
  if (writeCredentials && local !== undefined) {
    const urls = reachable(info);
    try {
      const home = embedded !== undefined ? { TOOLWIRE_HOME: stateDir } : io.env;
      const path = await writeLocalCredentials({ ...urls, listen: { host: info.host, port: info.port }, host: local.host, caller: local.caller }, home);
      lines.push(`  credentials written to ${path} (mode 0600)`);
    } catch (error) {
      logger.error({ err: error }, 'could not write the local credentials file');
      lines.push('  credentials file NOT written (see the log)');
    }
  }
  stdout.write(`${lines.join('\n')}\n`);

  const why = await stop.stopped;
  stopReload();
  stopState?.();
  seen?.dispose();
  await seen?.flush();
  logger.info({ reason: why }, 'shutting down');
  await server.close();
  await metricsListener?.close();
  logger.info('stopped');
  return ExitCode.OK;
}
