/**
 * `toolwire mcp` — the stdio door: an MCP server on stdin/stdout forwarding to the server's `/mcp`
 * (`../caller/stdio-bridge.ts`), for MCP clients that start stdio servers or cannot send a bearer
 * header. Nothing but MCP messages is written to stdout; notes go to stderr.
 */
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol/constants';
import { missingEndpointMessage, resolveEndpoint, unsendableTokenMessage } from '../endpoint.js';
import { type CliIO, processIO, write } from '../io.js';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../caller/mcp.js';
import { mcpUrl } from '../caller/url.js';
import { msProblem, parseMs } from '../ms.js';
import { TokenFileError, readTokenFile } from '../token-file.js';
import { argvProblem, joinNegativeValues, misuse } from '../usage.js';

export const mcpUsage = `usage: toolwire mcp [--server URL] [--token-file FILE] [options]

Run an MCP server on stdin/stdout that forwards to the toolwire server's MCP door: its tools, calls,
cancellation, progress and tool-list changes. For MCP clients that start a command (stdio) or cannot
send an Authorization header. Runs until stdin ends.

options:
  --server URL          server URL: ws://h:p, http://h:p, http://h:p/mcp, or h:p (http:// assumed)
                        (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token-file FILE     file holding the caller token (mode 0600) (default: $TOOLWIRE_TOKEN, then
                        $TOOLWIRE_TOKEN_FILE, then the local credentials file)
  --connect-timeout MS  time allowed to open the session with the server (default 10000)
  -h, --help            show this help

exit status: 0 stdin ended, 64 bad usage, 66 token file missing or unreadable, 69 server
unreachable or no answer within --connect-timeout, 70 unexpected failure, 77 token refused
(HTTP 401/403) or token file open to others.
`;

const flags = {
  server: { type: 'string' },
  'token-file': { type: 'string' },
  'connect-timeout': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `toolwire mcp …`. Resolves with the exit status once stdin has ended (see {@link mcpUsage}). */
export async function mcpCommand(argv: string[], io: CliIO = processIO()): Promise<number> {
  let values: { server?: string; 'token-file'?: string; 'connect-timeout'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, flags), options: flags, allowPositionals: false, strict: true }));
  } catch (error) {
    return usageError(io, argvProblem(error, flags, argv));
  }
  if (values.help) {
    await write(io.stdout, mcpUsage);
    return ExitCode.OK;
  }
  const connectTimeoutMs = parseMs(values['connect-timeout'], DEFAULT_CONNECT_TIMEOUT_MS);
  if (connectTimeoutMs === undefined) {
    return usageError(io, msProblem('--connect-timeout', values['connect-timeout']));
  }
  let token: string | undefined;
  try {
    const file = values['token-file'] ?? (io.env.TOOLWIRE_TOKEN ? undefined : io.env.TOOLWIRE_TOKEN_FILE || undefined);
    if (file !== undefined) token = await readTokenFile(file, values['token-file'] !== undefined ? '--token-file' : '$TOOLWIRE_TOKEN_FILE');
  } catch (error) {
    if (!(error instanceof TokenFileError)) throw error;
    await write(io.stderr, `toolwire mcp: ${error.message}\n`);
    return error.exitCode;
  }
  const endpoint = await resolveEndpoint('caller', { server: values.server, token }, io.env);
  if (endpoint.server === undefined || endpoint.token === undefined) {
    const missing = missingEndpointMessage(endpoint.server === undefined ? 'server' : 'token', io.env);
    await write(io.stderr, endpoint.server === undefined ? missing : missing.replace('give --token,', 'give --token-file,'));
    return ExitCode.USAGE;
  }
  const unsendable = unsendableTokenMessage(endpoint.token);
  if (unsendable !== undefined) {
    await write(io.stderr, unsendable);
    return ExitCode.USAGE;
  }
  let url: URL;
  try {
    url = mcpUrl(endpoint.server);
  } catch (error) {
    return usageError(io, `--server ${(error as Error).message}`);
  }
  const { StdioBridge, startFailure } = await import('../caller/stdio-bridge.js');
  const log = (line: string): void => void write(io.stderr, `${line}\n`);
  let bridge: Awaited<ReturnType<typeof StdioBridge.start>>;
  try {
    bridge = await StdioBridge.start({ url, token: endpoint.token, connectTimeoutMs, stdin: io.stdin, stdout: io.stdout, log });
  } catch (error) {
    const failure = startFailure(error, url);
    await write(io.stderr, `${failure.message}\n`);
    return failure.code;
  }
  log(`toolwire mcp: serving ${url.href} on stdio`);
  await bridge.closed;
  return ExitCode.OK;
}

async function usageError(io: CliIO, problem: string): Promise<number> {
  await write(io.stderr, misuse('mcp', problem, mcpUsage));
  return ExitCode.USAGE;
}
