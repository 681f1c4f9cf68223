/**
 * The MCP SDK is loaded only when an MCP source first connects (`sources/mcp/sdk.ts`): a tool host
 * that bridges no MCP server, or a program that imports `@toolwire/client` for `ToolHost` alone,
 * does not carry it (~18 MiB of private memory at start; bench/README.md, session 15).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const fixture = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'sdk-imports.mjs');

/** The MCP SDK modules a fresh node process resolved (see the fixture). */
async function sdkImports(mode: 'import' | 'load'): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, fixture, mode], { timeout: 30_000 });
  return JSON.parse(stdout.trim()) as string[];
}

describe('the MCP SDK is loaded on demand', () => {
  it('importing @toolwire/client resolves no module of the MCP SDK', async () => {
    expect(await sdkImports('import')).toEqual([]);
  });

  it('loading it for an MCP source resolves the SDK client (the check above can see it)', async () => {
    expect(await sdkImports('load')).toContain('@modelcontextprotocol/sdk/client/index.js');
  });
});
