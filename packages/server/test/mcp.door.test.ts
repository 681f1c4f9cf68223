/**
 * Issue 15 on the MCP door: protocol eras on one endpoint (the 1.x SDK client, the v2 client in the
 * 2025 era and pinned to 2026-07-28), cancellation every way (any request id, a response stream that
 * closes, a killed caller process, a deleted session), input that reaches the tool unchanged or is
 * refused with 65, session expiry and the per-caller session bound.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { type Capture, failureCapture, utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenTable } from '../src/auth/tokens.js';
import { Executor } from '../src/executor/executor.js';
import type { ExecuteRequest, ExecuteResult } from '../src/executor/request.js';
import { McpDoor } from '../src/mcp/door.js';
import type { ToolwireServerOptions } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import type { RoutedCall } from '../src/seam.js';
import { FakeInjection } from './fake-injection.js';

const TOKENS = { alice: 'alice-token-123', bob: 'bob-token-456' };
const MODERN = '2026-07-28';
const anySchema = { type: 'object' };

let router: FakeInjection;
let door: McpDoor;
let http: HttpServer;
let url: string;
let closers: (() => Promise<unknown>)[];
let executions: Promise<ExecuteResult>[];
let children: ChildProcess[];

function capture(stdout: string, exitCode = 0): Capture {
  return { stdout: utf8(stdout), stderr: utf8(''), exitCode };
}

/** A tool that runs until its call is stopped; `entered` resolves when a call reaches it, `stoppedAt` when its signal aborts. */
function slowTool(): { entered: Promise<RoutedCall>; stopped: Promise<number> } {
  let enter!: (call: RoutedCall) => void;
  let stop!: (at: number) => void;
  const entered = new Promise<RoutedCall>((resolve) => (enter = resolve));
  const stopped = new Promise<number>((resolve) => (stop = resolve));
  router.handlers.set(
    'slow',
    (call) =>
      new Promise((resolve) => {
        call.signal.addEventListener(
          'abort',
          () => {
            stop(performance.now());
            resolve(failureCapture('cancelled', 'stopped'));
          },
          { once: true },
        );
        enter(call);
      }),
  );
  return { entered, stopped };
}

async function startDoor(overrides: ToolwireServerOptions = {}): Promise<void> {
  const options = resolveServerConfig(overrides);
  const executor = new Executor({ injection: router, options: options.executor });
  const spy = {
    execute(req: ExecuteRequest): Promise<ExecuteResult> {
      const pending = executor.execute(req);
      executions.push(pending);
      return pending;
    },
  };
  const tokens = new TokenTable(
    [],
    [
      { name: 'alice', token: TOKENS.alice },
      { name: 'bob', token: TOKENS.bob },
    ],
  );
  door = new McpDoor({ executor: spy, tools: router, auth: tokens, options: options.mcp });
}

beforeEach(async () => {
  router = new FakeInjection();
  router.list = [
    { name: 'echo', description: 'Echo its input', inputSchema: anySchema },
    { name: 'slow', description: 'Runs until stopped', inputSchema: anySchema },
  ];
  router.handlers.set('echo', async (call) => capture(JSON.stringify(call.input)));
  executions = [];
  closers = [];
  children = [];
  await startDoor();
  http = createServer((req, res) => {
    if (req.url?.startsWith('/mcp')) void door.handle(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});

afterEach(async () => {
  const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
  const exited = running.map((c) => new Promise((resolve) => c.once('exit', resolve)));
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(exited);
  await Promise.allSettled(closers.map((close) => close()));
  await door.close();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
});

const requestInit = (token = TOKENS.alice) => ({ headers: { Authorization: `Bearer ${token}` } });

async function v1Client(): Promise<ClientV1> {
  const client = new ClientV1({ name: 'v1', version: '1.0.0' });
  closers.push(() => client.close());
  await client.connect(new TransportV1(new URL(url), { requestInit: requestInit() }));
  return client;
}

async function v2Client(era: '2025' | typeof MODERN): Promise<ClientV2> {
  const options = era === MODERN ? { versionNegotiation: { mode: { pin: MODERN } } } : {};
  const client = new ClientV2({ name: 'v2', version: '1.0.0' }, options);
  closers.push(() => client.close());
  await client.connect(new TransportV2(new URL(url), { requestInit: requestInit() }));
  return client;
}

const headers = (extra: Record<string, string> = {}, token = TOKENS.alice) => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  ...extra,
});

/** A raw 2025-06-18 session: its id, and a POST of one message in it. */
async function rawSession(token = TOKENS.alice): Promise<{ id: string; post: (message: object, signal?: AbortSignal) => Promise<Response> }> {
  const init = await fetch(url, {
    method: 'POST',
    headers: headers({}, token),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await init.text();
  const id = init.headers.get('mcp-session-id');
  if (id === null) throw new Error(`initialize answered ${init.status}`);
  const post = (message: object, signal?: AbortSignal) =>
    fetch(url, {
      method: 'POST',
      headers: headers({ 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' }, token),
      body: JSON.stringify(message),
      ...(signal && { signal }),
    });
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
  return { id, post };
}

/** The JSON-RPC answer with `id` in an SSE or JSON response body. */
async function answerOf(res: Response, id: string | number): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  const text = await res.text();
  const bodies = res.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as unknown)
    : [JSON.parse(text) as unknown];
  const answer = bodies.find((b) => (b as { id?: unknown }).id === id);
  if (answer === undefined) throw new Error(`no answer to ${JSON.stringify(id)} in ${text.slice(0, 300)}`);
  return answer as { result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** `transport` with the 1.x client's numeric request ids sent as strings `"id-N"` (requests, cancellations) and turned back in responses. */
function stringIds(transport: TransportV1, sent: unknown[]): Transport {
  type Message = { id?: unknown; method?: string; params?: { requestId?: unknown } };
  const wrapped: Transport = {
    start: () => transport.start(),
    close: () => transport.close(),
    send: (message, options) => {
      const m = { ...(message as Message) };
      if (typeof m.id === 'number') m.id = `id-${m.id}`;
      if (m.method === 'notifications/cancelled' && typeof m.params?.requestId === 'number') m.params = { ...m.params, requestId: `id-${m.params.requestId}` };
      if (m.method === 'tools/call') sent.push(m.id);
      if (m.method === 'notifications/cancelled') sent.push(m.params?.requestId);
      return transport.send(m as JSONRPCMessage, options);
    },
  };
  transport.onmessage = (message: JSONRPCMessage) => {
    const m = { ...(message as Message) };
    if (typeof m.id === 'string' && m.id.startsWith('id-') && !('method' in m)) m.id = Number(m.id.slice(3));
    wrapped.onmessage?.(m as JSONRPCMessage);
  };

  transport.onclose = () => wrapped.onclose?.();
  transport.onerror = (error) => wrapped.onerror?.(error);
  Object.defineProperty(wrapped, 'sessionId', { get: () => transport.sessionId });
  wrapped.setProtocolVersion = (version) => transport.setProtocolVersion(version);
  return wrapped;
}

/** Poll `check` every 20 ms until it holds, at most `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function exitCodeOf(pending: Promise<ExecuteResult> | undefined): Promise<number | undefined> {
  const result = await pending;
  return result?.outcome === 'completed' ? result.capture.exitCode : undefined;
}

describe('protocol eras on one endpoint', () => {
  it('serves a v2 client pinned to 2026-07-28: server/discover, listing and calling, no session kept', async () => {
    const client = await v2Client(MODERN);
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo', 'slow']);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result.structuredContent).toMatchObject({ stdout: '{"text":"hi"}', exitCode: 0 });
    expect(door.sessionCount).toBe(0);
  });

  it('serves a v2 client in the 2025 era (2025-11-25, a session) and the 1.x SDK client', async () => {
    const v2 = await v2Client('2025');
    expect(v2.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const v1 = await v1Client();
    expect(door.sessionCount).toBe(2);
    for (const client of [v2, v1]) {
      const result = await client.callTool({ name: 'echo', arguments: { n: 1 } });
      expect(result.structuredContent).toMatchObject({ stdout: '{"n":1}', exitCode: 0 });
    }
  });

  it('serves a raw 2025-06-18 session', async () => {
    const session = await rawSession();
    const answer = await answerOf(await session.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), 1);
    expect((answer.result?.tools as { name: string }[]).map((t) => t.name)).toEqual(['echo', 'slow']);
  });

  it('refuses a 2026-07-28 request with a mismatched Mcp-Method header', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: headers({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' }),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    });
    expect(res.status).toBe(400);
    await res.text();
    expect(router.routed).toHaveLength(0);
  });
});

describe('cancellation', () => {
  it.each([0, -7, 2 ** 40, '', 'call-☃', '0'])('notifications/cancelled for request id %j stops the call (130)', async (id) => {
    const slow = slowTool();
    const session = await rawSession();
    const res = session.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await slow.entered;
    await (await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } })).text();
    await slow.stopped;
    expect(await exitCodeOf(executions[0])).toBe(130);
    (await res).body?.cancel().catch(() => {});
  });

  it('stops the call when its response stream closes first (2025 session) — 130', async () => {
    const slow = slowTool();
    const session = await rawSession();
    const ac = new AbortController();
    const res = await session.post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow', arguments: {} } }, ac.signal);
    expect(res.status).toBe(200);
    await slow.entered;
    ac.abort();
    await slow.stopped;
    expect(await exitCodeOf(executions[0])).toBe(130);
    expect(door.sessionCount).toBe(1); // the session stays; only the call is gone
  });

  it('stops the call when a v2 client pinned to 2026-07-28 aborts it (the stream closes) — 130', async () => {
    const slow = slowTool();
    const client = await v2Client(MODERN);
    const ac = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: {} }, { signal: ac.signal });
    await slow.entered;
    ac.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    await slow.stopped;
    expect(await exitCodeOf(executions[0])).toBe(130);
  });

  it.each(['2025', MODERN])('a killed caller process (%s) has its call stopped within 1 s of its stream closing — 130', async (era) => {
    const slow = slowTool();
    const fixture = fileURLToPath(new URL('./fixtures/mcp-calling-client.mjs', import.meta.url));
    const child = spawn(process.execPath, [fixture, url, TOKENS.alice, era], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    await slow.entered;
    const killedAt = performance.now();
    child.kill('SIGKILL');
    const stoppedAt = await slow.stopped;
    expect(stoppedAt - killedAt).toBeLessThan(1000);
    expect(await exitCodeOf(executions[0])).toBe(130);
  });

  it.each(['number', 'string'] as const)(
    'the 1.x SDK client cancelling a call (AbortSignal → notifications/cancelled) by a %s request id stops it — 130',
    async (kind) => {
      const slow = slowTool();
      const transport = new TransportV1(new URL(url), { requestInit: requestInit() });
      const client = new ClientV1({ name: 'v1-cancel', version: '1.0.0' });
      closers.push(() => client.close());
      // The 1.x client numbers its requests; for string ids its messages are rewritten on the way out
      // (request ids and the cancelled requestId become "id-N") and back on the way in.
      const sent: unknown[] = [];
      await client.connect(kind === 'number' ? transport : stringIds(transport, sent));
      const ac = new AbortController();
      const call = client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: ac.signal });
      const routed = await slow.entered;
      ac.abort('user pressed stop');
      await expect(call).rejects.toThrow();
      await slow.stopped;
      expect(await exitCodeOf(executions.at(-1))).toBe(130);
      expect(routed.signal.aborted).toBe(true);
      expect(door.sessionCount).toBe(1); // only the call stopped
    },
  );

  it('stops the calls of a session ended by DELETE — 130', async () => {
    const slow = slowTool();
    const session = await rawSession();
    const res = session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await slow.entered;
    const del = await fetch(url, { method: 'DELETE', headers: headers({ 'mcp-session-id': session.id, 'mcp-protocol-version': '2025-06-18' }) });
    expect(del.status).toBe(200);
    await slow.stopped;
    expect(await exitCodeOf(executions[0])).toBe(130);
    expect(door.sessionCount).toBe(0);
    (await res).body?.cancel().catch(() => {});
  });
});

describe('answers held for one write', () => {
  it('sends the response headers of a plain call that runs longer than the hold while the call still runs (the hold is bounded)', async () => {
    const slow = slowTool();
    const session = await rawSession();
    let settled = false;
    const call = session.post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await slow.entered;
    void executions[0]!.then(() => (settled = true));
    const res = await call; // the headers: after the hold at most, the call still running
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(settled).toBe(false);
    await (await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } })).text();
    await slow.stopped;
    expect(await exitCodeOf(executions[0])).toBe(130);
    await res.body?.cancel();
  });

  it('answers a held plain call with its result', async () => {
    const session = await rawSession();
    const res = await session.post({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 } } });
    const answer = await answerOf(res, 8);
    expect(answer.result?.isError).toBe(false);
  });
});

describe('input reaches the tool unchanged or the call is refused', () => {
  const sent = { text: 'x', constructor: { prototype: 1 }, toString: 'y', nested: [{ 'a.b': null, ünï: '☃' }], big: 2 ** 53 - 1, empty: {} };

  it.each(['2025', MODERN] as const)('passes unusual keys and values through unchanged (v2 client, %s)', async (era) => {
    const client = await v2Client(era);
    const result = await client.callTool({ name: 'echo', arguments: structuredClone(sent) });
    expect(JSON.stringify(router.routed[0]!.input)).toBe(JSON.stringify(sent)); // same keys, order and values
    expect(result.isError).toBeFalsy();
  });

  it.each([
    ['top level', '{"text":"x","__proto__":{"polluted":true}}', 'arguments.__proto__'],
    ['nested', '{"list":[{"ok":1},{"__proto__":{}}]}', 'arguments.list[1].__proto__'],
  ])('refuses a __proto__ key (%s) with 65 and the reason, nothing routed', async (_where, args, path) => {
    const session = await rawSession();
    const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":${args}}}`;
    const res = await fetch(url, { method: 'POST', headers: headers({ 'mcp-session-id': session.id, 'mcp-protocol-version': '2025-06-18' }), body });
    const answer = await answerOf(res, 3);
    expect(answer.result?.isError).toBe(true);
    expect(answer.result?.structuredContent).toMatchObject({ exitCode: 65 });
    expect(JSON.stringify(answer.result?.content)).toContain(path);
    expect(router.routed).toHaveLength(0);
  });
});

describe('session hygiene', () => {
  async function restart(overrides: ToolwireServerOptions): Promise<void> {
    await door.close();
    await startDoor(overrides);
  }

  it('expires a session idle for mcpSessionIdleMs (even with its GET stream open); a request for it then gets 404', async () => {
    await restart({ mcpSessionIdleMs: 300 });
    const client = await v1Client(); // the 1.x client keeps a GET notification stream open
    const sessionId = (client.transport as TransportV1).sessionId!;
    expect(door.sessionCount).toBe(1);
    await until(() => door.sessionCount === 0);
    const res = await fetch(url, {
      method: 'POST',
      headers: headers({ 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    await res.text();
  });

  it('does not expire a session while a call of it runs', async () => {
    await restart({ mcpSessionIdleMs: 200 });
    const slow = slowTool();
    const session = await rawSession();
    const res = session.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    const call = await slow.entered;
    await new Promise((r) => setTimeout(r, 600)); // three idle periods: a busy session must outlive them
    expect(door.sessionCount).toBe(1);
    expect(call.signal.aborted).toBe(false);
    (await res).body?.cancel().catch(() => {});
  });

  it('refuses a tools/call whose arguments are nested deeper than mcpMaxInputDepth, on either era (400, -32602 with its id, nothing routed); at the bound it is routed', async () => {
    const nested = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
    const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"${MODERN}","io.modelcontextprotocol/clientCapabilities":{}}`;
    const modern = (args: string, id: number) =>
      fetch(url, {
        method: 'POST',
        headers: headers({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'echo' }),
        body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo",${meta},"arguments":${args}}}`,
      });
    // The default bound (1000 levels) against what made the SDK answer HTTP 500 before: 5000 levels.
    const deep = await modern(nested(5000), 7);
    expect(deep.status).toBe(400);
    expect(await deep.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32602, message: expect.stringContaining('nested deeper than 1000 levels (mcpMaxInputDepth)') },
    });
    await restart({ mcpMaxInputDepth: 4 });
    const session = await rawSession();
    const refused = await fetch(url, {
      method: 'POST',
      headers: headers({ 'mcp-session-id': session.id }),
      body: `{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"echo","arguments":${nested(5)}}}`,
    });
    expect(refused.status).toBe(400);
    expect((await refused.json()) as object).toMatchObject({ id: 's1', error: { code: -32602 } });
    expect(router.routed).toHaveLength(0);
    const atBound = await modern(nested(4), 8);
    expect(atBound.status).toBe(200);
    await atBound.text();
    expect(router.routed).toHaveLength(1);
  });

  it('bounds the 2026-07-28 subscriptions/listen streams of one caller (mcpMaxListensPerCaller): one more → 503 naming it; other callers unaffected; a closed stream frees its place', async () => {
    await restart({ mcpMaxListensPerCaller: 1 });
    const listen = (token = TOKENS.alice, signal?: AbortSignal) =>
      fetch(url, {
        method: 'POST',
        headers: headers({ 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' }, token),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'listen-1',
          method: 'subscriptions/listen',
          params: {
            notifications: { toolsListChanged: true },
            _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} },
          },
        }),
        ...(signal && { signal }),
      });
    const first = new AbortController();
    const open = await listen(TOKENS.alice, first.signal);
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toMatch(/text\/event-stream/);
    const refused = await listen();
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain('mcpMaxListensPerCaller 1');
    const bob = new AbortController();
    const other = await listen(TOKENS.bob, bob.signal);
    expect(other.status).toBe(200);
    first.abort(); // its place is free once the door sees the stream close
    let again = await listen(TOKENS.alice, bob.signal);
    for (const end = Date.now() + 10_000; again.status !== 200 && Date.now() < end; again = await listen(TOKENS.alice, bob.signal)) {
      await again.text();
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(again.status).toBe(200);
    bob.abort();
  });

  it('bounds sessions per caller: an idle one is evicted, and when all are busy → 503 naming mcpMaxSessionsPerCaller; others unaffected', async () => {
    await restart({ mcpMaxSessionsPerCaller: 1 });
    const first = await rawSession();
    const second = await rawSession(); // evicts the idle first one
    expect(door.sessionCount).toBe(1);
    const stale = await first.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(stale.status).toBe(404);
    await stale.text();
    const slow = slowTool();
    const busy = second.post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await slow.entered;
    const refused = await fetch(url, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain('mcpMaxSessionsPerCaller');
    await rawSession(TOKENS.bob);
    expect(door.sessionCount).toBe(2);
    (await busy).body?.cancel().catch(() => {});
  });
});
