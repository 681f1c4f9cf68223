/**
 * `toolwire host`'s flags and usage text, and what they build before the host connects: the
 * endpoint and token, the manifest's tools and MCP servers, the CA, the logger and the
 * `ToolHost`. `host.ts` runs it (its `hostCommand` lists the exit statuses).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol';
import { pino } from 'pino';
import {
  type CommandToolSpec,
  type Logger,
  ManifestError,
  ToolHost,
  type ToolHostOptions,
  loadManifestAndServers,
  loadMcpConfig,
  type McpServerConfig,
} from '@toolwire/client';
import { missingEndpointMessage, resolveEndpoint, withDefaultScheme } from '../endpoint.js';
import { type CliIO, write } from '../io.js';
import { readPemFile } from '../pem-file.js';
import { TokenFileError } from '../token-file.js';
import { argvProblem, joinNegativeValues, misuse } from '../usage.js';
import { LOG_FORMATS, logDestination, logFormatOf } from '../log-format.js';
import { metricsAddressOf } from './listen.js';
import { runnableTools } from './host-reload.js';
import { printable, quotedArg } from '../terminal-text.js';

export const hostUsage = `usage: toolwire host --manifest FILE [options]
       toolwire host --mcp-config FILE [options]

Run a tool host: connect to the server, advertise the manifest's tools, run calls, reconnect with
backoff when the connection is lost (network failures and HTTP 5xx; HTTP 429 after its
Retry-After). Runs until SIGINT or SIGTERM, or until the server refuses it for good. SIGHUP re-reads
the manifest and advertises the new tool set (calls in flight finish; a manifest that does not load
is logged and the old set stays). A tool whose program is not found is not advertised (a warning
names it).

options:
  --manifest FILE  tools to advertise ({"schema":1,"tools":{...}} or the list form); its
                   "mcp_servers" are served too
  --mcp-config FILE
                   MCP servers to serve: a .mcp.json or claude_desktop_config.json, read
                   unchanged ({"mcpServers": {"fs": {"command": "npx", "args": [...]}}});
                   each server's tools are advertised as <server>_<tool>
  --server URL     server WebSocket URL, e.g. ws://127.0.0.1:7700 (ws:// is assumed
                   without a scheme; default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T        host token; visible to ps, prefer --token-file
  --token-file F   read the host token from file F (one line; mode 0600: not readable or
                   writable by group or others)
                   token, first given: --token, --token-file, $TOOLWIRE_TOKEN,
                   $TOOLWIRE_TOKEN_FILE, then the local credentials file
  --env MODE       tools' environment: inherit (default: the host's environment minus its
                   credentials) or passthrough (only PATH, HOME, LANG, TERM, USER, SHELL,
                   TMPDIR, the tool's env_passthrough and env)
  --name N         host name; honoured only by a server in loopback dev mode
  --root DIR       working directory of tools without a cwd (default: the current directory)
  --max-concurrent N
                   calls running at once on this host (default 16; a tool's max_concurrency
                   lowers it for that tool); more wait in a queue, their deadline running
  --max-queued N   calls waiting for a place to run (default 256); more are answered 75 at once
  --max-input-bytes N
                   call input held for running and waiting calls, in bytes (default 67108864,
                   at least 16777216); a call that would pass it is answered 75 at once
  --no-stream      send each call's output in its result only, not while the tool runs
                   (default: live output when the server takes it)
  --ca FILE        trusted CA certificate (PEM) for a wss:// server
  --log-level L    fatal|error|warn|info|debug|trace|silent (default: $TOOLWIRE_LOG_LEVEL, then info)
  --log-format F   pretty|json (default: pretty on a terminal, else json)
  --metrics-listen HOST:PORT
                   serve this host's metrics at GET /metrics there (OpenMetrics, no token:
                   bind it where only your Prometheus reaches)
  -h, --help       show this help

Logs go to stderr: JSON lines (pino), or readable lines (pino-pretty) on a terminal or with
--log-format pretty. At info, one line per call end (call id, tool, exit code, ms).
Tools never see TOOLWIRE_TOKEN, TOOLWIRE_TOKEN_FILE, or any variable holding the token.
exit status: 0 after SIGINT/SIGTERM, 64 bad usage or unreadable --ca, 65 invalid or unreadable manifest
(or --mcp-config: over 4 MiB, a FIFO no process writes to, a pipe not written within 10 s),
66 missing, unreadable or malformed token file, 77 token file readable or writable by group or others,
69 replaced by a newer connection with the same token (another host is using it; close 4000),
or refused for good: origin refused (HTTP 403), another HTTP 4xx, or a TLS failure (certificate
not trusted, hostname mismatch, a server that does not speak TLS), 77 the server did not accept the token (HTTP 401, or 429
while its address is throttled for failed authentications).
`;

/** Extra knobs for embedding and tests. */
export interface HostCommandDeps {
  /** Default: pino to stderr at `--log-level`, else `$TOOLWIRE_LOG_LEVEL`, else `info`. */
  logger?: Logger;
}

/** The pino levels `--log-level` takes. */
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const flags = {
  manifest: { type: 'string' },
  'mcp-config': { type: 'string' },
  server: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  env: { type: 'string' },
  name: { type: 'string' },
  root: { type: 'string' },
  'max-concurrent': { type: 'string' },
  'max-queued': { type: 'string' },
  'max-input-bytes': { type: 'string' },
  'no-stream': { type: 'boolean' },
  ca: { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'metrics-listen': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The host's bounds on what a server can make it do (DESIGN §7), as flags. */
type LimitOptions = Pick<ToolHostOptions, 'maxConcurrentCalls' | 'maxQueuedCalls' | 'maxInFlightInputBytes'>;
const LIMIT_FLAGS = [
  ['max-concurrent', 'maxConcurrentCalls', 1],
  ['max-queued', 'maxQueuedCalls', 0],
  ['max-input-bytes', 'maxInFlightInputBytes', 1],
] as const satisfies readonly (readonly [keyof typeof flags, keyof LimitOptions, number])[];

/** `env` without `TOOLWIRE_TOKEN`, `TOOLWIRE_TOKEN_FILE` and any variable whose value is `token`. */
export function withoutCredentials(env: NodeJS.ProcessEnv, token: string | undefined): NodeJS.ProcessEnv {
  const copy: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (key !== 'TOOLWIRE_TOKEN' && key !== 'TOOLWIRE_TOKEN_FILE' && (token === undefined || value !== token)) copy[key] = value;
  }
  return copy;
}

/** What {@link prepareHost} built: the host (not started yet) and what running it needs. */
export interface PreparedHost {
  host: ToolHost;
  logger: Logger;
  /** `--metrics-listen`, parsed. */
  metricsAddress: { host: string; port: number } | undefined;
  /** `--manifest` as given (SIGHUP re-reads it). */
  manifest: string | undefined;
  /** The manifest's tools that can run, and the MCP servers served. */
  tools: CommandToolSpec[];
  servers: Map<string, McpServerConfig>;
  token: string | undefined;
  /** `--root`, absolute. */
  root: string;
}

/**
 * Parse `argv` (the arguments after `host`) and build the host, not started yet. Resolves with the
 * exit status instead when the command ends here: 0 for `--help`, 64 (`USAGE`) for bad flags, a
 * missing server or token or an unreadable `--ca`, 65 (`DATA_ERR`) for a manifest that cannot be
 * read or is invalid, 66 or 77 for a token file that cannot be used.
 */
export async function prepareHost(argv: string[], io: CliIO, deps: HostCommandDeps): Promise<PreparedHost | number> {
  let values: {
    manifest?: string;
    'mcp-config'?: string;
    server?: string;
    token?: string;
    'token-file'?: string;
    env?: string;
    name?: string;
    root?: string;
    'max-concurrent'?: string;
    'max-queued'?: string;
    'max-input-bytes'?: string;
    'no-stream'?: boolean;
    ca?: string;
    'log-level'?: string;
    'log-format'?: string;
    'metrics-listen'?: string;
    help?: boolean;
  };
  const usageError = async (problem: string): Promise<number> => {
    await write(io.stderr, misuse('host', problem, hostUsage));
    return ExitCode.USAGE;
  };
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, flags), options: flags, allowPositionals: false, strict: true }));
  } catch (error) {
    return usageError(argvProblem(error, flags, argv));
  }
  if (values.help) {
    await write(io.stdout, hostUsage);
    return ExitCode.OK;
  }
  if (values.manifest === undefined && values['mcp-config'] === undefined) return usageError('--manifest FILE or --mcp-config FILE is required');
  const level = values['log-level'] ?? (io.env.TOOLWIRE_LOG_LEVEL || 'info');
  if (!LEVELS.includes(level)) {
    const from = values['log-level'] !== undefined ? '--log-level' : '$TOOLWIRE_LOG_LEVEL';
    return usageError(`${from} must be one of ${LEVELS.join(', ')}, got ${quotedArg(level)}`);
  }
  const logFormat = logFormatOf(values['log-format'], process.stderr);
  if (logFormat === undefined) return usageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${quotedArg(values['log-format'])}`);
  const metricsAddress = metricsAddressOf(values['metrics-listen']);
  if (typeof metricsAddress === 'string') return usageError(metricsAddress);
  const envMode = values.env ?? 'inherit';
  if (envMode !== 'inherit' && envMode !== 'passthrough') return usageError(`--env must be inherit or passthrough, got ${quotedArg(envMode)}`);
  const limits: LimitOptions = {};
  for (const [flag, option, min] of LIMIT_FLAGS) {
    const text = values[flag];
    if (text === undefined) continue;
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min) return usageError(`--${flag} must be a whole number ≥ ${min}, got ${quotedArg(text)}`);
    limits[option] = n;
  }
  let server: string | undefined;
  let token: string | undefined;
  try {
    ({ server, token } = await resolveEndpoint('host', { server: values.server, token: values.token, tokenFile: values['token-file'] }, io.env));
  } catch (error) {
    if (!(error instanceof TokenFileError)) throw error;
    await write(io.stderr, `toolwire host: ${error.message}\n`);
    return error.exitCode;
  }
  if (server === undefined) {
    await write(io.stderr, missingEndpointMessage('server', io.env));
    return ExitCode.USAGE;
  }
  let serverUrl: string;
  try {
    serverUrl = withDefaultScheme(server, 'ws');
  } catch (error) {
    return usageError(`--server ${(error as Error).message}`);
  }
  if (token === undefined && values.name === undefined) {
    await write(io.stderr, missingEndpointMessage('token', io.env, 'host'));
    return ExitCode.USAGE;
  }
  let tools: CommandToolSpec[] = [];
  let ca: Buffer | undefined;
  const servers = new Map<string, McpServerConfig>();
  try {
    // `${TOOLWIRE_TOKEN}` in a manifest expands as unset: a tool's argv or env never carries the host's credentials.
    const env = withoutCredentials(io.env, token);
    if (values.manifest !== undefined) {
      // Read once: a manifest given as a pipe (`<(cat tools.json)`, /dev/stdin) cannot be read twice.
      const loaded = await loadManifestAndServers(values.manifest, env);
      tools = loaded.tools;
      for (const [name, config] of loaded.servers) servers.set(name, config);
    }
    if (values['mcp-config'] !== undefined) {
      for (const [name, config] of await loadMcpConfig(values['mcp-config'], env)) {
        if (servers.has(name)) throw new ManifestError(`mcpServers.${name}`, 'names a server the manifest already has', values['mcp-config']);
        servers.set(name, config);
      }
    }
    if (values.ca !== undefined) ca = await readPemFile(values.ca, '--ca', 'certificate');
  } catch (error) {
    // A ManifestError (65) or a PemFileError (64) names its file and flag.
    // The parser's message may quote the file's bytes (a binary file given by mistake): shown printable, on one line.
    await write(io.stderr, `toolwire host: ${printable((error as Error).message)}\n`);
    return error instanceof ManifestError ? ExitCode.DATA_ERR : ExitCode.USAGE;
  }
  const logger = deps.logger ?? pino({ level }, logDestination(logFormat, process.stderr));
  const root = resolve(values.root ?? '.');
  tools = await runnableTools(tools, root, logger);
  let host: ToolHost;
  try {
    host = new ToolHost({
      server: serverUrl,
      ...(token !== undefined ? { token } : {}),
      ...(values.name !== undefined ? { name: values.name } : {}),
      root,
      ...(ca !== undefined ? { ca } : {}),
      inheritEnv: envMode === 'inherit',
      liveOutput: values['no-stream'] !== true,
      metrics: metricsAddress !== undefined,
      ...limits,
      logger,
    });
    for (const tool of tools) host.command(tool.name, tool);
    for (const [name, config] of servers) host.mcpServer(name, config);
  } catch (error) {
    // The library names its own option (`ToolHostOptions.server …`); the user gave a flag.
    let message = (error as Error).message.replace(/^ToolHostOptions\.server\b/, '--server').replace(/^ToolHostOptions\.token\b/, 'the host token');
    for (const [flag, option] of LIMIT_FLAGS) message = message.replace(`ToolHostOptions.${option}`, `--${flag}`);
    return usageError(message);
  }
  return { host, logger, metricsAddress, manifest: values.manifest, tools, servers, token, root };
}
