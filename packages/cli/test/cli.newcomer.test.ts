/**
 * CLI rough edges a newcomer hit: an input over the door's request body limit (64, not "cannot
 * reach server"), `--server host:port` without a scheme, `toolwire tools` with no tools, and help
 * texts that list the exit codes actually used. Against a real ToolwireServer on 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mcpUrl } from '../src/caller/url.js';
import { callCommand, callUsage } from '../src/commands/call.js';
import { hostCommand, hostUsage } from '../src/commands/host.js';
import { mcpCommand } from '../src/commands/mcp.js';
import { statusCommand } from '../src/commands/status.js';
import { toolsCommand, toolsUsage } from '../src/commands/tools.js';
import { testIO } from './helpers/cli-io.js';
import { poll } from '../../client/test/helpers/process.js';

const CALLER = 'caller-token-0123456789';
const HOST = 'host-token-0123456789';
const silent = pino({ level: 'silent' });

let home: string;
let server: ToolwireServer | undefined;
/** Stops a `toolwire host` a test left running (SIGTERM, then waits for its exit). */
let stopHost: (() => Promise<unknown>) | undefined;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolwire-cli-newcomer-'));
});
afterEach(async () => {
  await stopHost?.();
  stopHost = undefined;
  await server?.close();
  server = undefined;
  await rm(home, { recursive: true, force: true });
});

const io = (stdin = '') => testIO({ TOOLWIRE_HOME: home }, stdin);

async function start(options: ConstructorParameters<typeof ToolwireServer>[0] = {}): Promise<{ port: number }> {
  server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST }], callers: [{ name: 'agent', token: CALLER }], logger: silent, ...options });
  const { url } = await server.listen(0, '127.0.0.1');
  return { port: Number(new URL(url).port) };
}

describe('toolwire call: input larger than the door accepts', () => {
  it('exits 64 "input too large" naming the server limit, instead of 69 "cannot reach server"', async () => {
    const { port } = await start({ mcpMaxRequestBodyBytes: 4096 });
    const t = io(JSON.stringify({ data: 'x'.repeat(10_000) }));
    expect(await callCommand(['alpha__echo', '-', '--server', `http://127.0.0.1:${port}`, '--token', CALLER], t)).toBe(64);
    expect(t.err()).toBe('toolwire: input too large: the server accepts at most 4096 bytes\n');
  });

  it('with the default limit (4 MiB) too', async () => {
    const { port } = await start();
    const t = io(JSON.stringify({ data: 'x'.repeat(5 * 1024 * 1024) }));
    expect(await callCommand(['alpha__echo', '-', '--server', `http://127.0.0.1:${port}`, '--token', CALLER], t)).toBe(64);
    expect(t.err()).toBe(`toolwire: input too large: the server accepts at most ${4 * 1024 * 1024} bytes\n`);
  });
});

describe('--server without a scheme', () => {
  it('mcpUrl takes h:p as http://h:p/mcp and keeps a given scheme', () => {
    expect(mcpUrl('127.0.0.1:7700').href).toBe('http://127.0.0.1:7700/mcp');
    expect(mcpUrl('localhost:7700').href).toBe('http://localhost:7700/mcp');
    expect(mcpUrl('[::1]:7700/mcp').href).toBe('http://[::1]:7700/mcp');
    expect(mcpUrl('https://h.example:8443').href).toBe('https://h.example:8443/mcp');
    expect(mcpUrl('wss://h.example:8443').href).toBe('https://h.example:8443/mcp');
  });

  it('a host name without a port and without a scheme is refused: mcpUrl throws naming HOST:PORT, not a dial to port 80', () => {
    for (const server of ['127.0.0.1', 'localhost', 'vm.example', '[::1]', '127.0.0.1:', 'vm/mcp']) {
      expect(() => mcpUrl(server)).toThrow(`has no port: write HOST:PORT (e.g. 127.0.0.1:7700) or a URL with a scheme, got ${JSON.stringify(server)}`);
    }
    // With a scheme the URL is taken as written (its default port), as curl does.
    expect(mcpUrl('https://h.example').href).toBe('https://h.example/mcp');
  });

  it('host, tools, call, status and mcp exit 64 with one line for --server 127.0.0.1 (no port) instead of dialing port 80', async () => {
    const manifest = join(home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: {} }));
    const problem = 'has no port: write HOST:PORT (e.g. 127.0.0.1:7700) or a URL with a scheme, got "127.0.0.1"';
    const h = io();
    expect(await hostCommand(['--manifest', manifest, '--server', '127.0.0.1', '--token', HOST], h, { logger: silent })).toBe(64);
    expect(h.err().split('\n')[0]).toBe(`toolwire host: --server ${problem}`);
    for (const [name, command] of [
      ['tools', toolsCommand],
      ['call', (argv: string[], t: ReturnType<typeof testIO>) => callCommand(['alpha__x', ...argv], t)],
      ['status', statusCommand],
      ['mcp', mcpCommand],
    ] as const) {
      const t = testIO({ TOOLWIRE_HOME: home, TOOLWIRE_TOKEN: CALLER });
      expect(await command(['--server', '127.0.0.1'], t), name).toBe(64);
      expect(t.err().split('\n')[0], name).toBe(`toolwire ${name}: --server ${problem}`);
    }
  });

  it('tools, call and host accept 127.0.0.1:PORT (http:// for callers, ws:// for hosts)', async () => {
    const { port } = await start();
    const manifest = join(home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { say: { description: 'say hi', input_schema: { type: 'object' }, command: ['echo', 'hi'] } } }));
    const hostIO = io();
    const running = hostCommand(['--manifest', manifest, '--server', `127.0.0.1:${port}`, '--token', HOST], hostIO, { logger: silent });
    stopHost = () => (hostIO.signals.emit('SIGTERM'), running);
    await poll(() => server!.router.tools().some((tool) => tool.name === 'alpha__say'), 10_000, 'the host to advertise');
    const listed = io();
    expect(await toolsCommand(['--server', `127.0.0.1:${port}`, '--token', CALLER], listed)).toBe(0);
    expect(listed.out()).toBe('alpha__say  say hi\n');
    const t = io();
    expect(await callCommand(['alpha__say', '--server', `127.0.0.1:${port}`, '--token', CALLER], t)).toBe(0);
    expect(t.out()).toBe('hi\n');
    hostIO.signals.emit('SIGTERM');
    expect(await running).toBe(0);
  });
});

describe('toolwire tools with no tools', () => {
  it('says so on stderr and exits 0; --json still prints []', async () => {
    const { port } = await start();
    const t = io();
    expect(await toolsCommand(['--server', `http://127.0.0.1:${port}`, '--token', CALLER], t)).toBe(0);
    expect(t.out()).toBe('');
    expect(t.err()).toBe('no tools (no tool host is connected, or none has advertised a tool yet)\n');
    const j = io();
    expect(await toolsCommand(['--server', `http://127.0.0.1:${port}`, '--token', CALLER, '--json'], j)).toBe(0);
    expect(j.out()).toBe('[]\n');
    expect(j.err()).toBe('');
  });
});

/** `tools` and `call`, with no server or token given, exit 64 with exactly `line` on stderr. */
async function expectToolsAndCallRefused(line: string): Promise<void> {
  const t = io();
  expect(await toolsCommand([], t)).toBe(64);
  expect(t.err()).toBe(line);
  const c = io();
  expect(await callCommand(['local__echo', '{}'], c)).toBe(64);
  expect(c.err()).toBe(line);
}

describe('a credentials file that is there but is not one', () => {
  it('tools, call and host say the file is not a credentials file, instead of telling to run "toolwire serve" to write it', async () => {
    const path = join(home, 'credentials.json');
    for (const text of ['garbage', '{"server": "ws://127.0.0.1:9"}']) {
      await writeFile(path, text, { mode: 0o600 });
      const line = `toolwire: no server: give --server, set TOOLWIRE_SERVER, or fix ${path}: it is not a credentials file (not a regular file of at most 64 KiB holding JSON with server, mcp, host and caller; "toolwire serve" here writes a new one)\n`;
      await expectToolsAndCallRefused(line);
      const h = io();
      expect(await hostCommand(['--manifest', join(home, 'none.json'), '--token', HOST], h)).toBe(64);
      expect(h.err()).toBe(line);
    }
  });
});

describe('a credentials file that cannot be used safely', () => {
  const valid = (port: number): string =>
    JSON.stringify({
      server: `ws://127.0.0.1:${port}`,
      mcp: `http://127.0.0.1:${port}/mcp`,
      host: { name: 'local', token: HOST },
      caller: { name: 'cli', token: CALLER },
    });

  it('one that group or others may read is not used: tools and call exit 64 with the chmod to run, as for a --token-file', async () => {
    const path = join(home, 'credentials.json');
    await writeFile(path, valid(9), { mode: 0o644 });
    await chmod(path, 0o644);
    await expectToolsAndCallRefused(
      `toolwire: no server: give --server, set TOOLWIRE_SERVER, or fix ${path}: group or others may read or write it (mode 0644); run: chmod 600 ${path}\n`,
    );
  });

  it('a FIFO in its place is not waited on, and a file over 64 KiB is not read: both are named as not a credentials file', async () => {
    const path = join(home, 'credentials.json');
    execFileSync('mkfifo', ['-m', '600', path]);
    const t = io();
    expect(await toolsCommand([], t)).toBe(64);
    expect(t.err()).toMatch(/it is not a credentials file/);
    await rm(path);
    await writeFile(path, valid(9).replace('"local"', `"local", "pad": "${'x'.repeat(70_000)}"`), { mode: 0o600 });
    const big = io();
    expect(await toolsCommand([], big)).toBe(64);
    expect(big.err()).toMatch(/it is not a credentials file/);
  });
});

describe('--help lists the exit codes the commands use', () => {
  it('call: 64, 69, 70, 77, 130 and the capture codes; tools: 0, 64, 69, 70, 77; host: 0, 64, 65, 69', () => {
    for (const code of ['64', '69', '70', '77', '124', '127', '130']) expect(callUsage).toContain(code);
    expect(callUsage).toMatch(/input larger than the server accepts/);
    expect(callUsage).toMatch(/--connect-timeout MS/);
    for (const code of ['0 ok', '64', '69', '70', '77']) expect(toolsUsage).toContain(code);
    for (const code of ['0 after', '64', '65', '69']) expect(hostUsage).toContain(code);
  });
});

describe('toolwire tools and call end their MCP session (issue 15)', () => {
  it('leave no session open on a real server: each run DELETEs the session it opened, also when the call fails', async () => {
    const { port } = await start();
    const server_ = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 6; i++) {
      expect(await toolsCommand(['--server', server_, '--token', CALLER], io())).toBe(0);
      expect(await callCommand(['alpha__missing', '{}', '--server', server_, '--token', CALLER], io())).toBe(127);
    }
    expect(server!.mcp.sessionCount).toBe(0);
  });
});
