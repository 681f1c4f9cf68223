/**
 * Live output through the MCP door: `notifications/progress` for a request with a progress token
 * (tested with the real SDK client), `notifications/toolwire/output` for `_meta["toolwire/stream"]`,
 * nothing extra without either, and backpressure from a caller that does not read its response.
 * A real `ToolwireServer` on 127.0.0.1:0; tools from a raw protocol-2 host (`streaming-host.ts`) or
 * the tool host library.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { ToolHost } from '@toolwire/client';
import { afterEach, describe, expect, it } from 'vitest';
import { type ListenInfo, ToolwireServer } from '../src/toolwire-server.js';
import type { ToolwireServerOptions } from '../src/options.js';
import { SLOW, waitFor } from './endpoint.harness.js';
import { type StreamingCall, StreamingHost } from './streaming-host.js';

const HOST_TOKEN = 'host-token-mcp-live-1';
const CALLER_TOKEN = 'caller-token-mcp-live-1';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(options: ToolwireServerOptions = {}): Promise<ListenInfo> {
  const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }], ...options });
  cleanups.push(() => server.close());
  return server.listen(0, '127.0.0.1');
}

async function streamingHost(info: ListenInfo, onCall: (call: StreamingCall) => Promise<void>): Promise<StreamingHost> {
  const host = await StreamingHost.connect(info.url, { token: HOST_TOKEN, tools: [SLOW], onCall });
  cleanups.push(() => host.ws.terminate());
  return host;
}

async function sdkClient(info: ListenInfo): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(info.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } });
  const client = new Client({ name: 'mcp-live-test', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A tool that prints `line N` `count` times, one every `everyMs`, then exits 0. */
function printer(count: number, everyMs: number) {
  return async (call: StreamingCall): Promise<void> => {
    for (let n = 1; n <= count; n++) {
      await call.write('stdout', `line ${n}\n`);
      await tick(everyMs); // the tool's own pace, not a wait for an event
    }
    call.end(0);
  };
}

describe('notifications/progress (MCP progress)', () => {
  it('reports bytes so far and the last line of output while the tool runs', async () => {
    const info = await startServer();
    await streamingHost(info, printer(8, 80));
    const client = await sdkClient(info);
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'alpha__slow', arguments: {} }, undefined, { onprogress: (p) => void progress.push(p) });
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: Array.from({ length: 8 }, (_, i) => `line ${i + 1}\n`).join('') });
    expect(progress.length).toBeGreaterThan(0);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
    for (const p of progress) expect(p.message).toMatch(/^line \d$/);
    expect(progress.at(-1)!.progress).toBeLessThanOrEqual(8 * 'line N\n'.length);
  });

  it("passes a host's progress message on as the progress message (an in-process tool's ctx.progress), until newer output", async () => {
    const info = await startServer();
    const host = await streamingHost(info, async (call) => {
      host.send({ type: 'progress', id: call.id, message: 'compiling 3/7' });
      await tick(100); // the tool's own pace: output within the 250 ms gap after the message
      await call.write('stdout', 'line a\n');
      await tick(500); // past the gap: the next output is notified at once
      await call.write('stdout', 'line b\n');
      await tick(100);
      call.end(0);
    });
    const client = await sdkClient(info);
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'alpha__slow', arguments: {} }, undefined, { onprogress: (p) => void progress.push(p) });
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: 'line a\nline b\n' });
    expect(progress.map((p) => p.message)).toEqual(['compiling 3/7', 'line b']);
    expect(progress[1]!.progress).toBeGreaterThan(progress[0]!.progress);
  });

  it('keeps a silent 30 s tool alive: SDK client, 10 s request timeout, resetTimeoutOnProgress → the call completes', { timeout: 60_000 }, async () => {
    const info = await startServer(); // progressIntervalMs: the default, 5000
    const host = new ToolHost({ server: info.url, token: HOST_TOKEN, reconnect: false });
    host.tool('build', { inputSchema: { type: 'object' } }, async (_input, ctx) => {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 30_000); // the 30 s tool of the issue
        ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)));
      });
      return 'built\n';
    });
    cleanups.push(() => host.close());
    await host.start();
    const client = await sdkClient(info);
    await waitFor(async () => (await client.listTools()).tools.some((t) => t.name === 'alpha__build'), 'alpha__build listed', 10_000);
    const progress: Progress[] = [];
    const began = Date.now();
    const result = await client.callTool({ name: 'alpha__build', arguments: {} }, undefined, {
      timeout: 10_000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => void progress.push(p),
    });
    expect(Date.now() - began).toBeGreaterThanOrEqual(29_000);
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: 'built\n' });
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i)); // silent: grows by one each time
  });
});

describe('notifications/toolwire/output (toolwire/stream)', () => {
  it('sends each chunk in order, base64 when it is not UTF-8, and the chunk count in the result _meta', async () => {
    const info = await startServer();
    await streamingHost(info, async (call) => {
      await call.write('stdout', 'hello\n');
      await call.write('stderr', Buffer.from([0xff, 0xfe]));
      call.end(2, { stdout: 'bye\n' });
    });
    const client = await sdkClient(info);
    const seen: { method: string; params?: Record<string, unknown> }[] = [];
    client.fallbackNotificationHandler = async (n) => void seen.push(n);
    const result = await client.callTool({ name: 'alpha__slow', arguments: {}, _meta: { 'toolwire/stream': true } });
    expect(seen.filter((n) => n.method === 'notifications/toolwire/output').map((n) => n.params)).toEqual([
      { stream: 'stdout', seq: 0, data: 'hello\n' },
      { stream: 'stderr', seq: 1, data: Buffer.from([0xff, 0xfe]).toString('base64'), encoding: 'base64' },
      { stream: 'stdout', seq: 2, data: 'bye\n' },
    ]);
    expect(result._meta).toEqual({ 'toolwire/output': { chunks: 3 } });
    expect(result.structuredContent).toMatchObject({ exitCode: 2, stdout: 'hello\nbye\n' });
  });
});

/** A bare MCP session over node:http (so a test can stop reading a response). */
async function rawSession(info: ListenInfo) {
  const url = new URL(info.mcpUrl);
  const post = (body: unknown, sessionId?: string): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = {
        authorization: `Bearer ${CALLER_TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (sessionId) Object.assign(headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' });
      const req = httpRequest(url, { method: 'POST', headers }, resolve);
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  const readAll = async (res: IncomingMessage): Promise<string> => {
    let text = '';
    for await (const chunk of res) text += String(chunk);
    return text;
  };
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  const sessionId = init.headers['mcp-session-id'] as string;
  await readAll(init);
  await readAll(await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId));
  return { post: (body: unknown) => post(body, sessionId), readAll };
}

describe('without a progress token or toolwire/stream', () => {
  it('sends nothing but the result, even while the tool streams', async () => {
    const info = await startServer({ progressIntervalMs: 20 });
    await streamingHost(info, printer(5, 30));
    const session = await rawSession(info);
    const body = await session.readAll(await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'alpha__slow', arguments: {} } }));
    const messages = body
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.length > 6)
      .map((l) => JSON.parse(l.slice(6)) as { id?: number; method?: string });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: 1, result: { structuredContent: { exitCode: 0 } } });
  });

  it('answers a request with a progress token on an SSE stream', async () => {
    const info = await startServer({ progressIntervalMs: 20 });
    await streamingHost(info, printer(3, 30));
    const session = await rawSession(info);
    const res = await session.post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'alpha__slow', arguments: {}, _meta: { progressToken: 'p' } } });
    expect(res.headers['content-type']).toBe('text/event-stream');
    const messages = (await session.readAll(res))
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.length > 6)
      .map((l) => JSON.parse(l.slice(6)) as { id?: number; method?: string });
    expect(messages.some((m) => m.method === 'notifications/progress')).toBe(true);
    expect(messages.at(-1)).toMatchObject({ id: 2, result: { structuredContent: { exitCode: 0 } } });
  });
});

describe('backpressure from the caller', () => {
  it('a caller that stops reading gets one drain wait on its response, not one per chunk (no MaxListenersExceededWarning)', { timeout: 60_000 }, async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    cleanups.push(() => process.off('warning', onWarning));
    const info = await startServer({ outputWindowBytes: 4 * 1024 * 1024 });
    let wire: StreamingCall | undefined;
    const total = 16 * 1024 * 1024;
    let wrote = 0;
    await streamingHost(info, async (call) => {
      wire = call;
      const block = Buffer.alloc(8 * 1024, 0x61); // many chunks per window: each one is handed on while the response is full
      for (; wrote < total; wrote += block.length) await call.write('stdout', block);
      call.end(0);
    });
    const session = await rawSession(info);
    const res = await session.post({
      jsonrpc: '2.0',
      id: 8,
      method: 'tools/call',
      params: { name: 'alpha__slow', arguments: {}, _meta: { 'toolwire/stream': true } },
    });
    await waitFor(() => wire?.waiting === true, 'the host waiting for credit', 30_000);
    const body = await session.readAll(res);
    expect(body.split('\n').find((l) => l.includes('"id":8'))).toMatch(/"exitCode":0/);
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });

  it('a caller that stops reading its response holds the tool at its window; reading again lets it finish', { timeout: 60_000 }, async () => {
    const total = 24 * 1024 * 1024;
    const info = await startServer({ outputWindowBytes: 256 * 1024 });
    let wrote = 0;
    let wire: StreamingCall | undefined;
    await streamingHost(info, async (call) => {
      wire = call;
      const block = Buffer.alloc(64 * 1024, 0x61);
      for (; wrote < total; wrote += block.length) await call.write('stdout', block);
      call.end(0);
    });
    const session = await rawSession(info);
    const res = await session.post({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'alpha__slow', arguments: {}, _meta: { 'toolwire/stream': true } },
    });
    // Nobody reads `res`: the socket fills, the door waits for 'drain', credit stops, the host blocks.
    // Held = waiting for credit with nothing sent over a span a reading caller never leaves it waiting.
    let held = -1;
    await waitFor(
      async () => {
        const before = wrote;
        if (!wire?.waiting) return false;
        await tick(300);
        if (wire.waiting && wrote === before) held = wrote;
        return held >= 0;
      },
      'the host held at its window',
      30_000,
    );
    expect(held).toBeLessThan(total / 2);
    const body = await session.readAll(res);
    expect(wrote).toBe(total);
    const result = body.split('\n').find((l) => l.includes('"id":7'));
    expect(result).toMatch(/"exitCode":0/);
  });
});
