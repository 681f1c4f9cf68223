/**
 * Issue 11 §2 — pre-auth exhaustion. A real `toolwire serve` process under `prlimit --nofile=256`
 * sizes its caps from that limit and says so; a slowloris of headers, bodies and upgrades (300
 * sockets from eight source addresses, more than the process's descriptors) fills its pre-auth caps,
 * while an MCP caller with a caller token and a tool host with a host token still connect at once,
 * and the server never comes near its descriptor limit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, repoRoot, tempDir, tracked, waitFor, waitForText } from '../helpers.js';
import { SOURCE_NODE_ARGS } from '../source-node.js';
import { slowloris } from '../soak/attacks/slowloris.js';

afterEach(cleanup);

const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
const FD_LIMIT = 256;

/** `toolwire serve` under `prlimit --nofile=N:N`, in its own process group (killed at cleanup). */
function serveLimited(config: string, home: string): ChildProcess {
  const args = [
    `--nofile=${FD_LIMIT}:${FD_LIMIT}`,
    '--',
    process.execPath,
    ...SOURCE_NODE_ARGS,
    cliPath,
    'serve',
    '--config',
    config,
    '--listen',
    '127.0.0.1:0',
    '--log-level',
    'info',
  ];
  return tracked(spawn(PRLIMIT!, args, { cwd: repoRoot, env: { ...process.env, TOOLWIRE_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'], detached: true }));
}

/** Descriptors `pid` has open now (0 once it is gone). */
function openDescriptors(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** An MCP `initialize` with the caller token: its HTTP status and session id. */
async function initialize(mcpUrl: string): Promise<{ status: number; session: string | null }> {
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${CALLER_TOKEN}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
    signal: AbortSignal.timeout(5_000),
  });
  await res.text();
  return { status: res.status, session: res.headers.get('mcp-session-id') };
}

/** A tool host's upgrade with the host token, then `hello` → `welcome`; resolves with the welcome's type. */
async function hostHello(url: string): Promise<string> {
  const ws = new WebSocket(url, 'toolwire.v1', { headers: { authorization: `Bearer ${HOST_TOKEN}` }, handshakeTimeout: 5_000 });
  ws.on('error', () => {});
  defer(() => ws.terminate());
  await once(ws, 'open');
  const frame = once(ws, 'message');
  ws.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'preauth-test' }));
  return (JSON.parse(String((await frame)[0])) as { type: string }).type;
}

describe.runIf(PRLIMIT !== undefined && existsSync('/proc/self/limits'))('pre-auth exhaustion at a lowered descriptor limit', () => {
  it('a slowloris of headers, bodies and upgrades never stops a caller or a host from connecting', async () => {
    const dir = await tempDir();
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }] }));
    const server = serveLimited(config, dir);
    const limitLine = waitForText(
      server.stderr!,
      /open-files limit (\d+) from \/proc\/self\/limits: unauthenticated connections at most (\d+) \((\d+) per address\), host connections at most (\d+)/,
    );
    const [, wsUrl] = await waitForText(server.stdout!, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)/);
    const url = wsUrl!;
    const mcpUrl = `${url.replace('ws://', 'http://')}/mcp`;
    const [, limit, preAuth, perAddress, hosts] = await limitLine;
    expect([limit, preAuth, perAddress, hosts].map(Number)).toEqual([FD_LIMIT, 24, 6, 96]);

    const atCap = waitForText(server.stderr!, /unauthenticated connections at their cap: closing the oldest/);
    const stop = new AbortController();
    const sources = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
    let closedByServer = 0;
    const onTick = (total: { closedByServer: number }): void => void (closedByServer = total.closedByServer);
    const attack = slowloris({ url, durationMs: 60_000, connections: 100, trickleMs: 200, reopenMs: 250, localAddresses: sources, signal: stop.signal, onTick });
    let peakFds = 0;
    const watch = setInterval(() => (peakFds = Math.max(peakFds, openDescriptors(server.pid!))), 10);
    try {
      await atCap;
      await waitFor(() => closedByServer >= 600, 'the server to have closed each attacking socket twice over', 30_000);
      for (let i = 0; i < 5; i++) {
        const init = await initialize(mcpUrl);
        expect(init.status).toBe(200);
        expect(init.session).toMatch(/^[0-9a-f-]{36}$/);
      }
      expect(await hostHello(url)).toBe('welcome');
    } finally {
      stop.abort();
      clearInterval(watch);
    }
    const report = await attack;
    expect(report.total.opened).toBeGreaterThan(300); // more sockets than the server has descriptors
    for (const kind of ['headers', 'bodies', 'upgrades'] as const) expect(report.byKind[kind].closedByServer).toBeGreaterThan(0);
    expect(peakFds).toBeGreaterThan(0);
    expect(peakFds).toBeLessThan(FD_LIMIT / 2); // 24 pre-auth sockets + the process's own: far from the limit
    expect((await fetch(`${url.replace('ws://', 'http://')}/healthz`)).status).toBe(200);
    expect(server.exitCode).toBeNull();
  });
});
