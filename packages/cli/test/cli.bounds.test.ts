/**
 * `toolwire call` and `toolwire tools` when the server dies or hangs: a lost server is noticed at
 * once (69 "lost the server"), connecting is bounded by --connect-timeout (69 "cannot reach
 * server"), and the wait for an answer by the deadline + cancel grace + margin (69, naming the
 * bound) — 124 only ever comes from the server. Real sockets on 127.0.0.1.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callCommand } from '../src/commands/call.js';
import { toolsCommand } from '../src/commands/tools.js';
import { testIO } from './helpers/cli-io.js';
import { FakeDoor } from './helpers/fake-door.js';
import { poll } from '../../client/test/helpers/process.js';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const TOKEN = 'caller-token';
const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..');
const tools = [{ name: 'alpha__hang', inputSchema: { type: 'object' as const } }];

let home: string;
const doors: FakeDoor[] = [];
const children: ChildProcess[] = [];
const silentServers: { server: Server; sockets: Set<Socket> }[] = [];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolwire-cli-bounds-'));
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  await Promise.all(doors.splice(0).map((d) => d.close()));
  for (const { server, sockets } of silentServers.splice(0)) {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await rm(home, { recursive: true, force: true });
});

const io = (stdin = '') => testIO({ TOOLWIRE_HOME: home }, stdin);

async function door(): Promise<FakeDoor> {
  const d = await FakeDoor.start(TOKEN, tools);
  doors.push(d);
  return d;
}

/** A TCP server that accepts connections and never writes a byte. */
async function silentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  silentServers.push({ server, sockets });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

/** A door that never answers a call, in its own process (so it can be killed with SIGKILL). */
async function doorProcess(): Promise<{ child: ChildProcess; port: number; lines: string[] }> {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, join(here, 'helpers', 'door-process.ts'), TOKEN], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines: string[] = [];
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  const port = Number(await poll(() => lines[0], 15_000, 'the door process to listen'));
  return { child, port, lines };
}

describe('toolwire call: the server dies mid-call', () => {
  it('server process killed with SIGKILL while the call waits: exits 69 "lost the server" at once', async () => {
    const { child, port, lines } = await doorProcess();
    const t = io();
    const running = callCommand(['alpha__hang', '--server', `127.0.0.1:${port}`, '--token', TOKEN], t);
    await poll(() => lines.includes('called alpha__hang'), 10_000, 'the call to reach the door');
    const killedAt = Date.now();
    child.kill('SIGKILL');
    expect(await running).toBe(69);
    expect(Date.now() - killedAt).toBeLessThan(2_000);
    expect(t.err()).toMatch(/^toolwire: lost the server http:\/\/127\.0\.0\.1:\d+\/mcp: .+\n$/);
    expect(t.out()).toBe('');
  });

  it('the server drops every connection mid-call: exits 69 "lost the server" naming the broken stream', async () => {
    const d = await door();
    d.answer = () => new Promise(() => {});
    const t = io();
    const running = callCommand(['alpha__hang', '--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN], t);
    await poll(() => d.calls.length === 1, 5_000, 'the call to reach the door');
    const droppedAt = Date.now();
    d.http.closeAllConnections();
    expect(await running).toBe(69);
    expect(Date.now() - droppedAt).toBeLessThan(2_000);
    expect(t.err()).toMatch(/^toolwire: lost the server http:\/\/127\.0\.0\.1:\d+\/mcp: the response stream broke \(.+\)\n$/);
  });

  it('the server ends the response stream without an answer: exits 69 "lost the server"', async () => {
    const d = await door();
    d.answer = () => new Promise(() => {});
    const t = io();
    const running = callCommand(['alpha__hang', '--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN], t);
    await poll(() => d.calls.length === 1, 5_000, 'the call to reach the door');
    const endedAt = Date.now();
    await d.closeSessions();
    expect(await running).toBe(69);
    expect(Date.now() - endedAt).toBeLessThan(2_000);
    expect(t.err()).toMatch(/^toolwire: lost the server http:\/\/127\.0\.0\.1:\d+\/mcp: the server ended the response stream without an answer\n$/);
  });

  it('an answer that arrives is never taken for a lost server: many quick calls all exit 0', async () => {
    const d = await door();
    for (let i = 0; i < 20; i++) {
      const t = io();
      expect(await callCommand(['alpha__hang', '--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN], t)).toBe(0);
      expect(t.err()).toBe('');
    }
  });
});

describe('toolwire call: the server hangs', () => {
  it('no answer to the call: exits 69 after deadline + cancel grace + margin, naming the bound (not 124)', async () => {
    const d = await door();
    d.answer = () => new Promise(() => {});
    const t = io();
    const began = Date.now();
    const code = await callCommand(['alpha__hang', '--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN, '--timeout', '100'], t, {
      cancelGraceMs: 50,
      marginMs: 150,
    });
    expect(code).toBe(69);
    expect(Date.now() - began).toBeGreaterThanOrEqual(300);
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(t.err()).toBe(
      `toolwire: no answer from http://127.0.0.1:${d.port}/mcp within 300 ms (the call's deadline 100 ms + cancel grace 50 ms + margin 150 ms); giving up\n`,
    );
  });

  it('a server that accepts TCP but never answers: exits 69 "cannot reach server" within --connect-timeout', async () => {
    const port = await silentServer();
    const t = io();
    const began = Date.now();
    expect(await callCommand(['alpha__hang', '--server', `127.0.0.1:${port}`, '--token', TOKEN, '--connect-timeout', '200'], t)).toBe(69);
    expect(Date.now() - began).toBeLessThan(2_000);
    expect(t.err()).toBe(`toolwire: cannot reach server http://127.0.0.1:${port}/mcp: no answer within 200 ms (connect timeout, --connect-timeout)\n`);
  });

  it('exits 64 for a --connect-timeout that is not a positive integer', async () => {
    const t = io();
    expect(await callCommand(['x', '--server', 'http://127.0.0.1:9', '--token', TOKEN, '--connect-timeout', '0'], t)).toBe(64);
    expect(t.err()).toMatch(/^toolwire call: --connect-timeout must be a positive integer \(ms\), got "0"/);
  });
});

describe('toolwire tools: the same bounds', () => {
  it('a server that accepts TCP but never answers: exits 69 within --connect-timeout', async () => {
    const port = await silentServer();
    const t = io();
    const began = Date.now();
    expect(await toolsCommand(['--server', `127.0.0.1:${port}`, '--token', TOKEN, '--connect-timeout', '200'], t)).toBe(69);
    expect(Date.now() - began).toBeLessThan(2_000);
    expect(t.err()).toBe(`toolwire: cannot reach server http://127.0.0.1:${port}/mcp: no answer within 200 ms (connect timeout, --connect-timeout)\n`);
  });

  it('tools/list never answered: exits 69 naming --connect-timeout', async () => {
    const d = await door();
    d.list = () => new Promise(() => {});
    const t = io();
    expect(await toolsCommand(['--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN, '--connect-timeout', '200'], t)).toBe(69);
    expect(t.err()).toBe(`toolwire: no answer from http://127.0.0.1:${d.port}/mcp within 200 ms (--connect-timeout); giving up\n`);
  });

  it('the server drops the connection during tools/list: exits 69 "lost the server"', async () => {
    const d = await door();
    let asked = false;
    d.list = () => {
      asked = true;
      return new Promise(() => {});
    };
    const t = io();
    const running = toolsCommand(['--server', `http://127.0.0.1:${d.port}`, '--token', TOKEN], t);
    await poll(() => asked, 5_000, 'tools/list to reach the door');
    d.http.closeAllConnections();
    expect(await running).toBe(69);
    expect(t.err()).toMatch(/^toolwire: lost the server http:\/\/127\.0\.0\.1:\d+\/mcp: /);
  });
});
