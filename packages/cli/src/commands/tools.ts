/**
 * `toolwire tools` — list the tools the server offers, through its MCP door.
 */
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol/constants';
import { missingEndpointMessage, resolveEndpoint, unsendableTokenMessage } from '../endpoint.js';
import { type CliIO, processIO, write } from '../io.js';
import { RpcError } from '../caller/errors.js';
import { mcpFailure } from '../caller/failure.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, type McpSession, connectMcp } from '../caller/mcp.js';
import { mcpUrl } from '../caller/url.js';
import { msProblem, parseMs } from '../ms.js';
import { argvProblem, joinNegativeValues, misuse } from '../usage.js';
import { printable } from '../terminal-text.js';

/** An MCP tool definition as `tools/list` gives it (only the fields this command reads are typed). */
export interface Tool {
  name: string;
  description?: string;
  title?: string;
  annotations?: Record<string, unknown>;
  [key: string]: unknown;
}

export const toolsUsage = `usage: toolwire tools [options]

List the tools the server offers (MCP tools/list), one per line: name, two spaces, description;
a tool with a title or behaviour hints shows them first: name  Title [read-only, destructive,
idempotent, open-world]  description.
With no tools, prints "no tools (no tool host is connected, or none has advertised a tool yet)"
on stderr (and [] with --json).

options:
  --server URL          server URL: ws://h:p, http://h:p, http://h:p/mcp, or h:p (http:// assumed)
                        (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T             caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --json                print the MCP tools array as JSON instead
  --connect-timeout MS  time allowed to connect, and to answer each list request (default 10000)
  -h, --help            show this help

exit status: 0 ok (also with no tools), 64 bad usage, 69 server unreachable, lost, or no answer
within --connect-timeout, 70 unexpected failure of this command, 75 refused for now (HTTP 429:
too many failed authentications from this address; the server's reason is printed), 77 token refused.
`;

const HINT_WORDS = [
  ['readOnlyHint', 'read-only'],
  ['destructiveHint', 'destructive'],
  ['idempotentHint', 'idempotent'],
  ['openWorldHint', 'open-world'],
] as const;

/**
 * One line of the text listing: `name  description` (first line of the description only), with the
 * title and the hints that are true first when the tool has them: `name  Title [read-only]  description`.
 * Control characters of the title and description (the host's text) are shown escaped (`terminal-text.ts`).
 */
export function toolLine(tool: Pick<Tool, 'name' | 'description' | 'title' | 'annotations'>): string {
  const description = printable((tool.description ?? '').split('\n')[0]!.trim());
  const hints = HINT_WORDS.filter(([key]) => tool.annotations?.[key] === true).map(([, word]) => word);
  const face = [typeof tool.title === 'string' ? printable(tool.title.split('\n')[0]!.trim()) : '', hints.length > 0 ? `[${hints.join(', ')}]` : '']
    .filter((s) => s)
    .join(' ');
  return [tool.name, face, description].filter((s) => s).join('  ') + '\n';
}

const flags = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  'connect-timeout': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** One page of `tools/list`, checked: `tools` an array of objects with a string `name`. */
function toolsPage(result: unknown): { tools: Tool[]; nextCursor: string | undefined } {
  const page = result as { tools?: unknown; nextCursor?: unknown } | null | undefined;
  const tools = page?.tools;
  if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'object' && t !== null && typeof (t as Tool).name === 'string')) {
    throw new RpcError(undefined, 'the server answered tools/list without a list of named tools');
  }
  return { tools: tools as Tool[], nextCursor: typeof page?.nextCursor === 'string' ? page.nextCursor : undefined };
}

/** `toolwire tools …`. Returns the exit status (see {@link toolsUsage}). */
export async function toolsCommand(argv: string[], io: CliIO = processIO()): Promise<number> {
  let values: { server?: string; token?: string; json?: boolean; 'connect-timeout'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, flags), options: flags, allowPositionals: false, strict: true }));
  } catch (error) {
    return usageError(io, argvProblem(error, flags, argv));
  }
  if (values.help) {
    await write(io.stdout, toolsUsage);
    return ExitCode.OK;
  }
  const connectTimeoutMs = parseMs(values['connect-timeout'], DEFAULT_CONNECT_TIMEOUT_MS);
  if (connectTimeoutMs === undefined) {
    return usageError(io, msProblem('--connect-timeout', values['connect-timeout']));
  }
  const { server, token } = await resolveEndpoint('caller', values, io.env);
  if (server === undefined || token === undefined) {
    await write(io.stderr, missingEndpointMessage(server === undefined ? 'server' : 'token', io.env));
    return ExitCode.USAGE;
  }
  const unsendable = unsendableTokenMessage(token);
  if (unsendable !== undefined) {
    await write(io.stderr, unsendable);
    return ExitCode.USAGE;
  }
  let url: URL;
  try {
    url = mcpUrl(server);
  } catch (error) {
    return usageError(io, `--server ${(error as Error).message}`);
  }
  let session: McpSession | undefined;
  try {
    session = await connectMcp(url, token, { connectTimeoutMs });
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const params = cursor !== undefined ? { cursor } : undefined;
      const page = toolsPage(await session.request('tools/list', params, { timeoutMs: connectTimeoutMs, bound: '--connect-timeout' }));
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 100_000);
    if (values.json) await write(io.stdout, `${JSON.stringify(tools, null, 2)}\n`);
    else if (tools.length === 0) await write(io.stderr, 'no tools (no tool host is connected, or none has advertised a tool yet)\n');
    else await write(io.stdout, tools.map(toolLine).join(''));
    return ExitCode.OK;
  } catch (error) {
    const failure = mcpFailure(error, url, session === undefined ? 'connect' : 'request');
    await write(io.stderr, failure.message);
    return failure.code;
  } finally {
    await session?.close();
  }
}

async function usageError(io: CliIO, problem: string): Promise<number> {
  await write(io.stderr, misuse('tools', problem, toolsUsage));
  return ExitCode.USAGE;
}
