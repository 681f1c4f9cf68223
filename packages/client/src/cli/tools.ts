/**
 * `toolwire tools` — list the tools the server offers, through its MCP door.
 */
import { parseArgs } from 'node:util';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ExitCode } from '@toolwire/protocol';
import { missingEndpointMessage, resolveEndpoint } from './endpoint.js';
import { type CliIO, processIO, write } from './io.js';
import { connectMcp, mcpFailure, mcpUrl } from './mcp.js';

export const toolsUsage = `usage: toolwire tools [--server URL] [--token T] [--json]

List the tools the server offers (MCP tools/list), one per line: name, two spaces, description.

options:
  --server URL   server URL: ws://h:p, http://h:p or http://h:p/mcp
                 (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T      caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --json         print the MCP tools array as JSON instead
  -h, --help     show this help

exit status: 0 ok, 64 bad usage, 69 server unreachable, 77 token refused.
`;

/** One line of the text listing: `name  description` (first line of the description only). */
export function toolLine(tool: Pick<Tool, 'name' | 'description'>): string {
  const description = (tool.description ?? '').split('\n')[0]!.trim();
  return description ? `${tool.name}  ${description}\n` : `${tool.name}\n`;
}

/** `toolwire tools …`. Returns the exit status (see {@link toolsUsage}). */
export async function toolsCommand(argv: string[], io: CliIO = processIO()): Promise<number> {
  let values: { server?: string; token?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { server: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    await write(io.stderr, `toolwire tools: ${(error as Error).message}\n\n${toolsUsage}`);
    return ExitCode.USAGE;
  }
  if (values.help) {
    await write(io.stdout, toolsUsage);
    return ExitCode.OK;
  }
  const { server, token } = await resolveEndpoint('caller', values, io.env);
  if (server === undefined || token === undefined) {
    await write(io.stderr, missingEndpointMessage(server === undefined ? 'server' : 'token', io.env));
    return ExitCode.USAGE;
  }
  let url: URL;
  try {
    url = mcpUrl(server);
  } catch (error) {
    await write(io.stderr, `toolwire tools: --server ${(error as Error).message}\n`);
    return ExitCode.USAGE;
  }
  let session: Awaited<ReturnType<typeof connectMcp>> | undefined;
  try {
    session = await connectMcp(url, token);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await session.client.listTools(cursor !== undefined ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 100_000);
    await write(io.stdout, values.json ? `${JSON.stringify(tools, null, 2)}\n` : tools.map(toolLine).join(''));
    return ExitCode.OK;
  } catch (error) {
    const failure = mcpFailure(error, url);
    await write(io.stderr, failure.message);
    return failure.code;
  } finally {
    await session?.close();
  }
}
