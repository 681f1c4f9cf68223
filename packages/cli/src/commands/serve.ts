/**
 * `toolwire serve` — run the central server until SIGINT/SIGTERM, then close it cleanly.
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
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol';
import { toolwireHome, writeLocalCredentials } from '../credentials.js';
import { type StateLink, applyState, ignoreHangup, watchReload, watchStop } from './serve-signals.js';
import { isLoopback } from '../loopback.js';
import { PemFileError, readPemFile } from '../pem-file.js';
import { StateError, readState, serverCredentials } from '../state.js';
import { embeddedCredentials, mergeCredentials, recordLastSeen, watchState } from './serve-state.js';
import { pino } from 'pino';
import {
  type CallerCredential,
  ClusterError,
  RecordDirError,
  type HostCredential,
  type ListenInfo,
  type ServerTls,
  ToolwireServer,
  type ToolwireServerOptions,
} from '@toolwire/server';
import { ConfigError, DEFAULT_LISTEN, type ServeConfig, loadConfig, parseListen } from './serve-config.js';
import { argvProblem, misuse } from '../usage.js';
import { LOG_FORMATS, logDestination, logFormatOf } from '../log-format.js';
import { type MetricsListener, listenMetrics } from './metrics-listen.js';

export const serveUsage = `usage: toolwire serve [options]

  --listen HOST:PORT   address to bind (default ${DEFAULT_LISTEN}; [::1]:PORT for IPv6)
  --config FILE        JSON config: hosts, callers, recordDir, limits (default: embedded:
                       the state folder's credentials, with a host "local" and a caller
                       "cli" made on first start); SIGHUP reloads its hosts and callers
  --state-dir DIR      state folder: lasting credentials, kept as digests (default
                       $TOOLWIRE_HOME, else ~/.toolwire); with --config only when given
  --tls-cert FILE      PEM certificate (chain): serve wss:// and https:// (needs --tls-key)
  --tls-key FILE       PEM private key of --tls-cert
  --log-level LEVEL    fatal|error|warn|info|debug|trace|silent (default info), logs on stderr
  --log-format F       pretty|json (default: pretty on a terminal, else json)
  --metrics-listen HOST:PORT
                       also serve GET /metrics there, without a token (on the server's
                       port /metrics needs a caller token)
  --nats URL[,URL]     join a cluster of server nodes over NATS (credentials, TLS: the config's
                       "cluster" key); --cluster NAME (default "default"), --node ID (default random)
  -h, --help           show this help

Without --config, SIGHUP is ignored (nothing to reload).
Changes made by "toolwire token" apply to the running server within 1 s.
exit status: 0 after SIGINT/SIGTERM, 64 bad usage or a bad config file or credential,
65 a bad tokens.json, 69 the address cannot be bound (e.g. the port is in use),
73 the state folder, or the config's recordDir, is not a folder or cannot be written,
77 permission denied.
`;

const LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

const flags = {
  listen: { type: 'string' },
  config: { type: 'string' },
  'state-dir': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'log-level': { type: 'string', default: 'info' },
  'log-format': { type: 'string' },
  'metrics-listen': { type: 'string' },
  nats: { type: 'string' },
  cluster: { type: 'string' },
  node: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Where `serveCommand` writes and what stops it (all default to the process's own). */
export interface ServeIo {
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Environment for the credentials file location (`TOOLWIRE_HOME`). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Aborting it stops the server as SIGINT/SIGTERM do (for embedding and tests). */
  signal?: AbortSignal;
}

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
  const usageError = (message: string): number => {
    stderr.write(misuse('serve', message, serveUsage));
    return ExitCode.USAGE;
  };

  let values;
  try {
    values = parseArgs({ args: argv, options: flags, allowPositionals: false, strict: true }).values;
  } catch (error) {
    return usageError(argvProblem(error, flags, argv));
  }
  if (values.help) {
    stdout.write(serveUsage);
    return ExitCode.OK;
  }
  const level = values['log-level'];
  if (!LEVELS.has(level)) return usageError(`--log-level must be one of ${[...LEVELS].join(', ')}, got "${level}"`);
  const logFormat = logFormatOf(values['log-format'], stderr);
  if (logFormat === undefined) return usageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got "${values['log-format']}"`);
  let metricsAddress: { host: string; port: number } | undefined;
  try {
    if (values['metrics-listen'] !== undefined) metricsAddress = parseListen(values['metrics-listen']);
  } catch (error) {
    if (error instanceof ConfigError) return usageError(`--metrics-listen: ${error.message}`);
    throw error;
  }

  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) return usageError('--tls-cert and --tls-key go together');

  let config: ServeConfig | undefined;
  let listen: { host: string; port: number };
  try {
    if (values.config !== undefined) config = await loadConfig(values.config, io.env);
    listen = parseListen(values.listen ?? config?.listen ?? DEFAULT_LISTEN);
  } catch (error) {
    if (error instanceof ConfigError) return usageError(error.message);
    throw error;
  }
  let tls: ServerTls | undefined;
  const certFile = values['tls-cert'] ?? config?.tls?.certFile;
  const keyFile = values['tls-key'] ?? config?.tls?.keyFile;
  if (certFile !== undefined && keyFile !== undefined) {
    try {
      tls = {
        cert: await readPemFile(certFile, values['tls-cert'] ? '--tls-cert' : 'config tlsCert', 'certificate'),
        key: await readPemFile(keyFile, values['tls-key'] ? '--tls-key' : 'config tlsKey', 'private key'),
      };
    } catch (error) {
      if (error instanceof PemFileError) return usageError(`TLS: ${error.message}`);
      throw error;
    }
  }

  // Embedded default: the state folder, with a lasting host "local" and caller "cli".
  const stateDir = values['state-dir'] ?? (config === undefined ? toolwireHome(io.env) : undefined);
  let hosts: HostCredential[];
  let callers: CallerCredential[];
  let embedded: { host: { name: string; token: string }; caller: { name: string; token: string }; made: boolean } | undefined;
  try {
    if (config === undefined) {
      const made = await embeddedCredentials(stateDir!);
      embedded = made;
      ({ hosts, callers } = serverCredentials(made.state));
    } else {
      ({ hosts, callers } = stateDir === undefined ? config : mergeCredentials(config, serverCredentials(await readState(stateDir))));
    }
  } catch (error) {
    if (!(error instanceof StateError)) throw error;
    stderr.write(`toolwire serve: ${error.message}\n`);
    return error.exitCode;
  }
  const state: StateLink | undefined = stateDir === undefined ? undefined : { dir: stateDir, config: config && { hosts: config.hosts, callers: config.callers } };
  const writeCredentials = config === undefined || config.writeCredentials;
  if (config?.writeCredentials === true && (config.hosts.length === 0 || config.callers.length === 0)) {
    return usageError('writeCredentials needs at least one host and one caller in the config');
  }

  // The server also logs a failed listen (with its stack) that `listen()` rejects with; this command
  // reports it in one line instead, so that log entry is dropped.
  const logger = pino(
    {
      level,
      base: { name: 'toolwire' },
      hooks: {
        logMethod(args, method) {
          if ((args[0] as { err?: { syscall?: unknown } } | undefined)?.err?.syscall === 'listen') return;
          method.apply(this, args);
        },
      },
    },
    logDestination(logFormat, stderr),
  );
  let server: ToolwireServer;
  try {
    const cluster = clusterOptions(values, config);
    server = new ToolwireServer({ ...config?.options, hosts, callers, logger, ...(tls && { tls }), ...(cluster && { cluster }) });
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) return usageError(`${values.config ? `config ${values.config}: ` : ''}${error.message}`);
    // e.g. a TLS key that does not match the certificate, or is not PEM
    if (tls !== undefined && error instanceof Error) return usageError(`cannot use the TLS certificate and key: ${error.message}`);
    throw error;
  }

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
  const stopReload = values.config !== undefined ? watchReload(values.config, server, logger, io.env, state) : ignoreHangup(logger);
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

/** `--nats`/`--cluster`/`--node` over the config's `cluster` key (flags win). */
function clusterOptions(values: { nats?: string; cluster?: string; node?: string }, config: ServeConfig | undefined): ToolwireServerOptions['cluster'] {
  const fromConfig = config?.options.cluster;
  if (values.nats === undefined && fromConfig === undefined) {
    if (values.cluster !== undefined || values.node !== undefined) throw new TypeError('--cluster and --node need --nats (or a config "cluster" key)');
    return undefined;
  }
  return {
    ...fromConfig,
    nats: values.nats !== undefined ? values.nats.split(',').map((u) => u.trim()) : fromConfig!.nats,
    ...(values.cluster !== undefined && { name: values.cluster }),
    ...(values.node !== undefined && { node: values.node }),
  };
}
