/** Issue 14: MCP server configuration and the manifest's tool metadata keys. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManifestError, loadMcpConfig } from '../src/index.js';
import { parseManifest } from '../src/manifest/parse.js';
import { parseMcpServers } from '../src/sources/mcp/config.js';

async function file(doc: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-mcp-config-'));
  const path = join(dir, 'config.json');
  await writeFile(path, JSON.stringify(doc));
  return path;
}

describe('MCP server configuration', () => {
  it('reads a claude_desktop_config.json unchanged: other top-level keys and client keys ignored, disabled servers left out, ${VAR} expanded', async () => {
    const path = await file({
      globalShortcut: 'Ctrl+Space',
      mcpServers: {
        fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '${HOME}/work'], env: { A: '${X:-dflt}' }, autoApprove: [] },
        web: { type: 'http', url: 'http://127.0.0.1:${PORT}/mcp', headers: { Authorization: 'Bearer ${T}' } },
        off: { command: 'x', disabled: true },
      },
    });
    const servers = await loadMcpConfig(path, { HOME: '/home/me', PORT: '9', T: 'tok' });
    expect([...servers.keys()]).toEqual(['fs', 'web']);
    expect(servers.get('fs')).toEqual({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/home/me/work'], env: { A: 'dflt' } });
    expect(servers.get('web')).toEqual({ url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer tok' } });
  });

  it('refuses what it cannot serve, naming the key path', () => {
    const bad = (entry: unknown) => () => parseMcpServers({ s: entry }, 'mcpServers', '/');
    expect(bad({ command: 'a', url: 'http://x' })).toThrow(/mcpServers\.s must have either "command"/);
    expect(bad({ url: 'http://x', type: 'sse' })).toThrow(/mcpServers\.s\.type "sse" is not served/);
    expect(bad({ command: 'a', args: [1] })).toThrow(/mcpServers\.s\.args must be an array of strings/);
    expect(bad({ command: 'a', prefix: 'a b' })).toThrow(/prefix must match/);
    expect(bad({ command: 'a', max_tools: 0 })).toThrow(/max_tools must be a positive integer/);
    // fetch refuses a URL with credentials, so such a server could never be reached; its error (with the password) would be logged at every retry.
    expect(bad({ url: 'http://user:secret-pw@127.0.0.1:1/mcp' })).toThrow(/mcpServers\.s\.url must not hold user:password@ \(give credentials in "headers"\)$/);
    expect(bad({ url: 'http://user:secret-pw@127.0.0.1:1/mcp' })).not.toThrow(/secret-pw/);
    // A timer cannot wait longer: Node would fire it after 1 ms (TimeoutOverflowWarning), failing every start.
    expect(bad({ command: 'a', startup_timeout_ms: 1e20 })).toThrow(/startup_timeout_ms must be a positive integer \(ms\), at most 2147483647/);
    expect(parseMcpServers({ s: { command: 'a', startup_timeout_ms: 2147483647 } }, 'mcpServers', '/').get('s')!.startupTimeoutMs).toBe(2147483647);
    expect(() => parseMcpServers({ 'a.b': { command: 'a' } }, 'mcpServers', '/')).toThrow(ManifestError);
  });

  it('a manifest may carry mcp_servers (tools then optional) and tool metadata keys', () => {
    expect(parseManifest({ schema: 1, mcp_servers: { fs: { command: 'x' } } }, { baseDir: '/' })).toEqual([]);
    const [tool] = parseManifest(
      { schema: 1, tools: { t: { command: ['x'], title: 'T', annotations: { readOnlyHint: true }, output_schema: { type: 'object' } } } },
      { baseDir: '/' },
    );
    expect(tool).toMatchObject({ title: 'T', annotations: { readOnlyHint: true }, outputSchema: { type: 'object' } });
    expect(() => parseManifest({ schema: 1, tools: { t: { command: ['x'], annotations: { fastHint: true } } } }, { baseDir: '/' })).toThrow(
      /annotations\.fastHint is not a known key/,
    );
  });
});
