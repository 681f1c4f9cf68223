/**
 * Issue 14 acceptance with a real published MCP server (`@modelcontextprotocol/server-filesystem`,
 * a pinned dev dependency): `toolwire host --mcp-config .mcp.json` (a host process), `toolwire
 * tools` lists its tools with titles and hints, a directory is listed and a file read from the
 * server side, and SIGKILL of the host leaves no MCP server process behind (checked with ps) —
 * the server runs under a `sh -c` wrapper, as `npx` would run it, so a grandchild is covered too.
 */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, finish, repoRoot, spawnTs, startServer, tempDir, text, waitFor } from '../helpers.js';
import { listed, run } from './harness.js';

afterEach(cleanup);

const FS_BIN = join(repoRoot, 'packages', 'client', 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

/** Pids of processes whose command line names `marker`. */
function processesWith(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

describe('toolwire host --mcp-config with @modelcontextprotocol/server-filesystem', () => {
  it('lists its tools with titles and hints, lists a directory and reads a file; SIGKILL of the host leaves no server process', async () => {
    const dir = await tempDir('toolwire-fs-');
    await writeFile(join(dir, 'hello.txt'), 'hello from the server side\n');
    const config = join(dir, '.mcp.json');
    // The shape Claude Code and Claude Desktop read, unchanged; `; :` keeps sh as the parent of node.
    await writeFile(config, JSON.stringify({ mcpServers: { fs: { command: '/bin/sh', args: ['-c', `"${process.execPath}" "${FS_BIN}" "${dir}"; :`] } } }));
    const started = await startServer({ cancelGraceMs: 500 });
    const host = spawnTs([cliPath, 'host', '--mcp-config', config, '--server', started.url, '--token', HOST_TOKEN, '--log-level', 'warn']);
    let log = '';
    host.stderr!.on('data', (d: string) => (log += d));
    await listed(started, ['alpha__fs_read_text_file', 'alpha__fs_list_directory'], 30_000).catch((error: Error) => {
      throw new Error(`${error.message}\n${log}`);
    });

    const tools = await finish(spawnTs([cliPath, 'tools', '--server', started.mcpUrl, '--token', CALLER_TOKEN]));
    expect(tools.code).toBe(0);
    expect(tools.stdout).toMatch(/^alpha__fs_read_text_file {2}Read Text File \[read-only\] {2}Read the complete contents/m);
    expect(tools.stdout).toMatch(/^alpha__fs_write_file {2}Write File \[destructive, idempotent\]/m);

    const listing = await run(started, 'alpha__fs_list_directory', { path: dir });
    expect(listing.capture.exitCode).toBe(0);
    expect(text(listing.capture.stdout)).toContain('[FILE] hello.txt');

    const read = await finish(
      spawnTs([cliPath, 'call', 'alpha__fs_read_text_file', JSON.stringify({ path: join(dir, 'hello.txt') }), '--server', started.mcpUrl, '--token', CALLER_TOKEN]),
    );
    expect(read.code).toBe(0);
    expect(read.stdout).toContain('hello from the server side');

    const servers = processesWith(FS_BIN);
    expect(servers.length).toBeGreaterThanOrEqual(2); // the sh wrapper and node
    process.kill(host.pid!, 'SIGKILL');
    await waitFor(() => processesWith(FS_BIN).length === 0, 'no MCP server process left after SIGKILL of the host', 10_000);
  }, 90_000);
});
