import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLocalCredentials } from '../src/credentials.js';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mcpUrl } from '../src/caller/url.js';
import { callCommand } from '../src/commands/call.js';
import { hostCommand } from '../src/commands/host.js';
import { toolsCommand } from '../src/commands/tools.js';
import { FakeDoor } from './helpers/fake-door.js';
import { FakeServer } from '../../client/test/helpers/fake-server.js';
import { poll } from '../../client/test/helpers/process.js';
import { testIO, type TestIO } from './helpers/cli-io.js';

const TOKEN = 'caller-token';
const tools = [
  { name: 'alpha__read_file', description: 'Print a file.\nMore detail.', inputSchema: { type: 'object' as const } },
  { name: 'alpha__sleep', inputSchema: { type: 'object' as const } },
];

/** Test IO with the credentials file pointed at this suite's `home` unless `env` says otherwise. */
function io(env: NodeJS.ProcessEnv = {}, stdin = ''): TestIO {
  return testIO({ TOOLWIRE_HOME: home, ...env }, stdin);
}

let home: string;
let door: FakeDoor;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolwire-cli-'));
  door = await FakeDoor.start(TOKEN, tools);
});
afterEach(async () => {
  await door.close();
  await rm(home, { recursive: true, force: true });
});

describe('mcpUrl', () => {
  it('normalises ws://, http:// and http://…/mcp to the MCP door URL', () => {
    expect(mcpUrl('ws://127.0.0.1:7700').href).toBe('http://127.0.0.1:7700/mcp');
    expect(mcpUrl('wss://h.example:443/hosts').href).toBe('https://h.example/mcp');
    expect(mcpUrl('http://127.0.0.1:7700').href).toBe('http://127.0.0.1:7700/mcp');
    expect(mcpUrl('http://127.0.0.1:7700/mcp').href).toBe('http://127.0.0.1:7700/mcp');
    expect(() => mcpUrl('ftp://x')).toThrow(TypeError);
  });
});

describe('toolwire tools', () => {
  it('prints one tool per line, name and first description line; accepts a ws:// URL', async () => {
    const t = io();
    expect(await toolsCommand(['--server', `ws://127.0.0.1:${door.port}`, '--token', TOKEN], t)).toBe(0);
    expect(t.out()).toBe('alpha__read_file  Print a file.\nalpha__sleep\n');
  });

  it('prints the tools array with --json, taking server and token from the environment', async () => {
    const t = io({ TOOLWIRE_SERVER: `http://127.0.0.1:${door.port}`, TOOLWIRE_TOKEN: TOKEN });
    expect(await toolsCommand(['--json'], t)).toBe(0);
    expect(JSON.parse(t.out())).toEqual(tools);
  });

  it('falls back to the local credentials file (.mcp, .caller.token)', async () => {
    await writeLocalCredentials(
      { server: 'ws://127.0.0.1:1', mcp: `http://127.0.0.1:${door.port}/mcp`, host: { name: 'h', token: 'host' }, caller: { name: 'c', token: TOKEN } },
      { TOOLWIRE_HOME: home },
    );
    const t = io();
    expect(await toolsCommand([], t)).toBe(0);
    expect(t.out()).toContain('alpha__sleep');
  });

  it('exits 77 for a refused token, 69 for an unreachable server, 64 for bad usage', async () => {
    const refused = io();
    expect(await toolsCommand(['--server', `http://127.0.0.1:${door.port}`, '--token', 'wrong'], refused)).toBe(77);
    expect(refused.err()).toMatch(/token refused/);
    const port = door.port;
    await door.close();
    const down = io();
    expect(await toolsCommand(['--server', `http://127.0.0.1:${port}`, '--token', TOKEN], down)).toBe(69);
    expect(down.err()).toMatch(/^toolwire: cannot reach server http:\/\/127\.0\.0\.1:\d+\/mcp: ECONNREFUSED/);
    door = await FakeDoor.start(TOKEN, tools);
    expect(await toolsCommand(['--bogus'], io())).toBe(64);
    expect(await toolsCommand([], io())).toBe(64); // no server anywhere
  });
});

describe('toolwire call', () => {
  const server = () => ['--server', `ws://127.0.0.1:${door.port}`, '--token', TOKEN];

  it('writes the capture bytes to stdout/stderr and exits with its exit code; passes deadline and workspace in _meta', async () => {
    door.answer = () => ({
      content: [{ type: 'text', text: 'Exit code: 3' }],
      structuredContent: { stdout: Buffer.from([0xff, 0x00, 0x41]).toString('base64'), stdoutEncoding: 'base64', stderr: 'warn\n', exitCode: 3 },
    });
    const t = io();
    expect(await callCommand(['alpha__read_file', '{"path":"a"}', ...server(), '--timeout', '500', '--workspace', '/w'], t)).toBe(3);
    expect([...t.outBytes()]).toEqual([0xff, 0x00, 0x41]);
    expect(t.err()).toBe('warn\n');
    expect(door.calls[0]).toMatchObject({ name: 'alpha__read_file', arguments: { path: 'a' }, meta: { 'toolwire/deadlineMs': 500, 'toolwire/workspace': '/w' } });
  });

  it('defaults the input to {} and the deadline to 120000 ms; "-" reads the input from stdin', async () => {
    expect(await callCommand(['alpha__sleep', ...server()], io())).toBe(0);
    expect(door.calls[0]).toMatchObject({ arguments: {}, meta: { 'toolwire/deadlineMs': 120000 } });
    expect(await callCommand(['alpha__sleep', '-', ...server()], io({}, '{"seconds": 1}'))).toBe(0);
    expect(door.calls[1]!.arguments).toEqual({ seconds: 1 });
  });

  it('prints the text and exits 77 when the result has no capture (declined)', async () => {
    door.answer = () => ({ content: [{ type: 'text', text: 'toolwire: alpha__sleep is not granted to agent' }], isError: true });
    const t = io();
    expect(await callCommand(['alpha__sleep', ...server()], t)).toBe(77);
    expect(t.err()).toBe('toolwire: alpha__sleep is not granted to agent\n');
  });

  it('exits 64 for invalid JSON, a non-object input, a bad timeout or a missing name', async () => {
    expect(await callCommand(['x', '{nope', ...server()], io())).toBe(64);
    expect(await callCommand(['x', '[1]', ...server()], io())).toBe(64);
    expect(await callCommand(['x', '--timeout', '1.5', ...server()], io())).toBe(64);
    expect(await callCommand([...server()], io())).toBe(64);
    expect(door.calls).toHaveLength(0);
  });

  it('exits 77 for a refused token and 69 for an unreachable server', async () => {
    expect(await callCommand(['x', '--server', `http://127.0.0.1:${door.port}`, '--token', 'bad'], io())).toBe(77);
    const port = door.port;
    await door.close();
    const t = io();
    expect(await callCommand(['x', '--server', `http://127.0.0.1:${port}`, '--token', TOKEN], t)).toBe(69);
    expect(t.err()).toMatch(/cannot reach server/);
    door = await FakeDoor.start(TOKEN, tools);
  });

  it('on SIGINT cancels the request (the server sees the cancellation), prints the reason and exits 130', async () => {
    door.answer = (call) =>
      new Promise((resolve) => call.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'late' }] }), { once: true }));
    const t = io();
    const running = callCommand(['alpha__sleep', ...server()], t);
    await poll(() => door.calls.length === 1, 5000, 'the call to reach the door');
    t.signals.emit('SIGINT');
    const t0 = Date.now();
    expect(await running).toBe(130);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(t.err()).toBe('toolwire: cancelled by stop\n');
    await poll(() => door.calls[0]!.signal.aborted, 2000, 'the door to see notifications/cancelled');
    expect(t.signals.listenerCount('SIGINT')).toBe(0);
  });
});

describe('toolwire host', () => {
  let fake: FakeServer | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('prints help, and exits 64 without a manifest or server, 65 for an invalid manifest', async () => {
    const help = io();
    expect(await hostCommand(['--help'], help)).toBe(0);
    expect(help.out()).toMatch(/^usage: toolwire host/);
    expect(await hostCommand(['--server', 'ws://127.0.0.1:1', '--token', 't'], io())).toBe(64);
    expect(await hostCommand(['--manifest', 'x.json', '--token', 't'], io())).toBe(64);
    const bad = join(home, 'bad.json');
    await writeFile(bad, JSON.stringify({ schema: 1, tools: { t: { input_schema: { type: 'object' }, command: [] } } }));
    const t = io();
    expect(await hostCommand(['--manifest', bad, '--server', 'ws://127.0.0.1:1', '--token', 't'], t)).toBe(65);
    expect(t.err()).toMatch(/tools\.t\.command must be a non-empty array of strings/);
  });

  it('advertises the manifest tools with env fallbacks and stops cleanly on SIGTERM', async () => {
    fake = await FakeServer.start({ tokens: ['host-token'] });
    const manifest = join(home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { say: { description: 'say', input_schema: { type: 'object' }, command: ['echo', 'hi'] } } }));
    const t = io({ TOOLWIRE_SERVER: fake.url, TOOLWIRE_TOKEN: 'host-token' });
    const running = hostCommand(['--manifest', manifest], t, { logger: pino({ level: 'silent' }) });
    const conn = await fake.nextConnection();
    expect((await conn.next('advertise')).tools).toEqual([{ name: 'say', description: 'say', inputSchema: { type: 'object' } }]);
    conn.send({ type: 'call', id: 'c1', tool: 'say', input: {}, workspace: '/', agent: 'a', deadlineMs: 5000 });
    expect(await conn.next('result')).toMatchObject({ id: 'c1', stdout: 'hi\n', exitCode: 0 });
    t.signals.emit('SIGTERM');
    expect(await running).toBe(0);
    expect((await conn.closed).code).toBe(1000);
  });
});
