import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { type CallMessage, type ServerMessage, PROTOCOL_VERSION, SUBPROTOCOL } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type ListenInfo, ToolwireServer } from '../src/toolwire-server.js';

const HOST_TOKEN = 'host-token-server-test-1';
const CALLER_TOKEN = 'caller-token-server-test-1';

let server: ToolwireServer;
let info: ListenInfo;
let recordDir: string;
let sockets: WebSocket[];
let clients: Client[];

/** A raw WebSocket tool host advertising `echo` and `hang` (answers only when cancelled). */
async function startHost(): Promise<{ ws: WebSocket; calls: CallMessage[]; closed: Promise<number> }> {
  const ws = new WebSocket(info.url, SUBPROTOCOL, { headers: { authorization: `Bearer ${HOST_TOKEN}` } });
  sockets.push(ws);
  ws.on('error', () => {});
  const calls: CallMessage[] = [];
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  let advertisedOk!: () => void;
  const advertised = new Promise<void>((resolve) => (advertisedOk = resolve));
  ws.on('message', (data: Buffer) => {
    const msg = JSON.parse(String(data)) as ServerMessage;
    if (msg.type === 'welcome') {
      ws.send(
        JSON.stringify({
          type: 'advertise',
          tools: [
            { name: 'echo', description: 'Echo text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
            { name: 'hang', inputSchema: { type: 'object' } },
          ],
        }),
      );
    } else if (msg.type === 'advertised') {
      advertisedOk();
    } else if (msg.type === 'call') {
      calls.push(msg);
      if (msg.tool === 'echo') {
        ws.send(JSON.stringify({ type: 'result', id: msg.id, stdout: `${(msg.input as { text: string }).text}\n`, stderr: '', exitCode: 0 }));
      }
    } else if (msg.type === 'cancel') {
      ws.send(JSON.stringify({ type: 'result', id: msg.id, stdout: 'partial\n', stderr: '', exitCode: 143 }));
    }
  });
  await once(ws, 'open');
  ws.send(JSON.stringify({ type: 'hello', protocol: PROTOCOL_VERSION, software: 'server.test' }));
  await advertised;
  return { ws, calls, closed };
}

async function connectCaller(): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(info.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${CALLER_TOKEN}` } } });
  const client = new Client({ name: 'server-test', version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

/** The one `output.json` recorded for `agent` (the executor's call id differs from the wire id). */
async function recorded(agent: string): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const ids = await readdir(join(recordDir, agent));
  expect(ids).toHaveLength(1);
  return JSON.parse(await readFile(join(recordDir, agent, ids[0]!, 'output.json'), 'utf8'));
}

async function health(): Promise<unknown> {
  const res = await fetch(info.url.replace('ws://', 'http://') + '/healthz');
  expect(res.status).toBe(200);
  return res.json();
}

beforeEach(async () => {
  recordDir = await mkdtemp(join(tmpdir(), 'toolwire-server-'));
  server = new ToolwireServer({
    hosts: [{ name: 'h1', token: HOST_TOKEN }],
    callers: [{ name: 'alice', token: CALLER_TOKEN }],
    recordDir,
    cancelGraceMs: 500,
  });
  info = await server.listen();
  sockets = [];
  clients = [];
});

afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await server.close();
  for (const ws of sockets) ws.terminate();
  await rm(recordDir, { recursive: true, force: true });
});

describe('ToolwireServer', () => {
  it('listens on 127.0.0.1 with ws:// and http://…/mcp URLs', () => {
    expect(info.host).toBe('127.0.0.1');
    expect(info.port).toBeGreaterThan(0);
    expect(info.url).toBe(`ws://127.0.0.1:${info.port}`);
    expect(info.mcpUrl).toBe(`http://127.0.0.1:${info.port}/mcp`);
  });

  it('reports hosts and tools on /healthz and 404 elsewhere', async () => {
    expect(await health()).toEqual({ ok: true, hosts: 0, tools: 0 });
    await startHost();
    expect(await health()).toEqual({ ok: true, hosts: 1, tools: 2 });
    expect((await fetch(`http://127.0.0.1:${info.port}/nope`)).status).toBe(404);
  });

  it('calls a WebSocket host tool through the MCP door and records the call on disk', async () => {
    const host = await startHost();
    const client = await connectCaller();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['h1__echo', 'h1__hang']);
    const result = await client.callTool({ name: 'h1__echo', arguments: { text: 'hello' }, _meta: { 'toolwire/workspace': '/ws' } });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Exit code: 0\nhello\n' }],
      isError: false,
      structuredContent: { stdout: 'hello\n', stderr: '', exitCode: 0 },
    });
    expect(host.calls[0]).toMatchObject({ tool: 'echo', input: { text: 'hello' }, agent: 'alice', workspace: '/ws' });
    const output = await recorded('alice');
    expect(output).toMatchObject({ stdout: 'hello\n', stderr: '', exitCode: 0 });
  });

  it('tells MCP sessions when a host connects', async () => {
    const client = await connectCaller();
    let changed!: () => void;
    const received = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
    const host = await startHost();
    let heard = false;
    void received.then(() => (heard = true));
    // The SDK client opens its notification stream (GET) after initialize, so the first change may
    // go unheard: reconnect the host (a toolsChanged each way) until it is heard, bounded.
    for (let i = 0; i < 50 && !heard; i++) {
      await Promise.race([received, new Promise((r) => setTimeout(r, 50))]);
      if (heard) break;
      host.ws.close();
      await host.closed;
      Object.assign(host, await startHost());
    }
    expect(heard).toBe(true);
  });

  it('stops an in-flight MCP call with 130 when the MCP client cancels it', async () => {
    const host = await startHost();
    const client = await connectCaller();
    const ac = new AbortController();
    const call = client.callTool({ name: 'h1__hang', arguments: {} }, undefined, { signal: ac.signal });
    const until = Date.now() + 5_000;
    while (host.calls.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(server.executor.inFlight).toBe(1);
    ac.abort();
    await expect(call).rejects.toThrow();
    await server.executor.whenIdle();
    const output = await recorded('alice');
    expect(output.exitCode).toBe(130);
    expect(output.stdout).toBe('partial\n');
  });

  it('closes host sessions with 1001 and settles their calls 69 (server going away) on close()', async () => {
    const host = await startHost();
    const pending = server.executor.execute({ name: 'h1__hang', input: {}, agent: 'bob' });
    const until = Date.now() + 5_000;
    while (host.calls.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await server.close();
    const result = await pending;
    expect(result.outcome === 'completed' && result.capture.exitCode).toBe(69);
    expect(await host.closed).toBe(1001);
    expect(server.mcp.sessionCount).toBe(0);
    expect(server.hostEndpoint.sessionCount).toBe(0);
  });
});
