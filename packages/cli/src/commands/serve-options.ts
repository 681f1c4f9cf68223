/**
 * `toolwire serve`'s flags and usage text, and what they build before the server listens: the
 * config and the listen address, TLS, the credentials (the state folder's embedded default, or the
 * config's), the logger and the `ToolwireServer`. `serve.ts` runs it (its module comment says how
 * and lists the exit statuses).
 */
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol';
import { toolwireHome } from '../credentials.js';
import type { StateLink } from './serve-signals.js';
import { PemFileError, readPemFile } from '../pem-file.js';
import { StateError, readState, serverCredentials } from '../state.js';
import { embeddedCredentials, mergeCredentials } from './serve-state.js';
import { pino } from 'pino';
import { type CallerCredential, type HostCredential, type ServerTls, ToolwireServer, type ToolwireServerOptions } from '@toolwire/server';
import { ConfigError, DEFAULT_LISTEN, type ServeConfig, loadConfig, parseListen } from './serve-config.js';
import { metricsAddressOf } from './listen.js';
import { quotedArg } from '../terminal-text.js';
import { argvProblem, misuse } from '../usage.js';
import { LOG_FORMATS, logDestination, logFormatOf } from '../log-format.js';

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

/** What {@link prepareServe} built: the server (not listening yet) and what running it needs. */
export interface PreparedServe {
  /** `--config` as given. */
  configFile: string | undefined;
  config: ServeConfig | undefined;
  listen: { host: string; port: number };
  /** `--metrics-listen`, parsed. */
  metricsAddress: { host: string; port: number } | undefined;
  tls: ServerTls | undefined;
  /** The state folder in use, if any. */
  stateDir: string | undefined;
  state: StateLink | undefined;
  /** Without `--config`: the embedded default's host and caller (`made`: made by this start). */
  embedded: { host: { name: string; token: string }; caller: { name: string; token: string }; made: boolean } | undefined;
  /** Whether the local credentials file is written. */
  writeCredentials: boolean;
  logger: pino.Logger;
  server: ToolwireServer;
}

/**
 * Parse `argv` (the arguments after `serve`) and build the server, not listening yet. Resolves with
 * the exit status instead when the command ends here: 0 for `--help`; 64 (EX_USAGE) for bad flags, a
 * bad `--listen` or `--metrics-listen`, a bad config file, TLS file or credential; 65, 73 or 77 when
 * the state folder cannot be used.
 */
export async function prepareServe(argv: string[], io: ServeIo): Promise<PreparedServe | number> {
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
  if (!LEVELS.has(level)) return usageError(`--log-level must be one of ${[...LEVELS].join(', ')}, got ${quotedArg(level)}`);
  const logFormat = logFormatOf(values['log-format'], stderr);
  if (logFormat === undefined) return usageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${quotedArg(values['log-format'])}`);
  const metricsAddress = metricsAddressOf(values['metrics-listen']);
  if (typeof metricsAddress === 'string') return usageError(metricsAddress);

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
  return { configFile: values.config, config, listen, metricsAddress, tls, stateDir, state, embedded, writeCredentials, logger, server };
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
