/**
 * `toolwire host --manifest F` / `--mcp-config F` with files that are not plain small files, run as
 * real `toolwire host` processes: a FIFO nobody writes to, `/dev/zero` and a 1 TiB sparse file are
 * refused at once (exit 65, one line naming the file), and a pipe with a writer — process
 * substitution `<(cat m.json)`, or `/dev/stdin` fed by a pipe — is read like the file it carries.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_TOKEN, type Started, cleanup, cliPath, finish, repoRoot, spawnTs, startServer, tempDir, tracked, waitFor } from './helpers.js';
import { SOURCE_NODE_ARGS } from './source-node.js';

afterEach(cleanup);

const manifest = { schema: 1, tools: { hello: { description: 'says hello', input_schema: { type: 'object' }, command: ['echo', 'hello'] } } };
const hostArgs = ['host', '--server', 'ws://127.0.0.1:9', '--token', HOST_TOKEN, '--log-format', 'json'];
/** `toolwire host` from source without `--server`, for bash to run with the file arguments after it. */
const HOST = [process.execPath, ...SOURCE_NODE_ARGS, cliPath, 'host', '--token', HOST_TOKEN, '--log-format', 'json'];

/** Run `script` with bash (`$1`… = `args`): its own process group, killed at teardown if still alive. */
function bash(script: string, args: string[]): ChildProcess {
  return tracked(spawn('bash', ['-c', script, 'bash', ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], detached: true }));
}

/** Wait until `started`'s server lists `name`, or the host process has exited (then fail with its stderr). */
async function advertised(started: Started, child: ChildProcess, name: string): Promise<void> {
  let log = '';
  child.stderr!.on('data', (d: string) => (log += d));
  await waitFor(() => started.server.router.tools().some((t) => t.name === name) || child.exitCode !== null, `${name} to be advertised`, 15_000);
  if (child.exitCode !== null) throw new Error(`toolwire host exited ${child.exitCode}: ${log}`);
}

describe('toolwire host: a manifest or MCP config that is not a regular file', () => {
  it('a FIFO that no process writes to is refused 65 at once, naming the file, for --manifest and --mcp-config', async () => {
    const dir = await tempDir();
    const fifo = join(dir, 'tools.json');
    execFileSync('mkfifo', [fifo]);
    const m = await finish(spawnTs([cliPath, ...hostArgs, '--manifest', fifo]));
    expect(m.stderr).toBe(`toolwire host: manifest ${fifo}: cannot read: a FIFO or pipe that no process writes to (nothing to read)\n`);
    expect(m.code).toBe(65);
    const c = await finish(spawnTs([cliPath, ...hostArgs, '--mcp-config', fifo]));
    expect(c.stderr).toBe(`toolwire host: manifest ${fifo}: cannot read an MCP config: a FIFO or pipe that no process writes to (nothing to read)\n`);
    expect(c.code).toBe(65);
  });

  it('/dev/zero and a 1 TiB sparse file are refused 65 by size, not read', async () => {
    const dir = await tempDir();
    const huge = join(dir, 'huge.json');
    await writeFile(huge, '');
    await truncate(huge, 2 ** 40);
    for (const file of ['/dev/zero', huge]) {
      const r = await finish(spawnTs([cliPath, ...hostArgs, '--manifest', file]));
      expect(r.stderr).toBe(`toolwire host: manifest ${file}: cannot read: larger than 4194304 bytes\n`);
      expect(r.code).toBe(65);
    }
  });

  it('a manifest given by process substitution, <(cat tools.json), is read once and its tool advertised', async () => {
    const dir = await tempDir();
    const file = join(dir, 'tools.json');
    await writeFile(file, JSON.stringify(manifest));
    const started = await startServer();
    const child = bash('exec "${@:3}" --server "$1" --manifest <(cat "$2")', [started.url, file, ...HOST]);
    await advertised(started, child, 'alpha__hello');
  });

  it('a manifest on /dev/stdin fed by a pipe is read, and so is an MCP config given as <(cat .mcp.json)', async () => {
    const dir = await tempDir();
    const file = join(dir, 'tools.json');
    await writeFile(file, JSON.stringify(manifest));
    const mcp = join(dir, 'mcp.json');
    await writeFile(mcp, JSON.stringify({ mcpServers: {} }));
    const started = await startServer();
    const piped = bash('cat "$2" | exec "${@:3}" --server "$1" --manifest /dev/stdin', [started.url, file, ...HOST]);
    await advertised(started, piped, 'alpha__hello');
    process.kill(-piped.pid!, 'SIGTERM');
    await once(piped, 'exit');
    const started2 = await startServer();
    const config = bash('exec "${@:4}" --server "$1" --manifest "$2" --mcp-config <(cat "$3")', [started2.url, file, mcp, ...HOST]);
    await advertised(started2, config, 'alpha__hello');
  });
});
