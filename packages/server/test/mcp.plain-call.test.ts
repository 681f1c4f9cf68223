/**
 * The door's own answer to a plain `tools/call` (`mcp/plain-call.ts`) against the SDK transport's
 * answer to the same call: the same bytes on the wire (status line, headers but `Date`, chunked SSE
 * body), whatever the result; the SDK still serves what is not plain; cancellation and session end.
 * The SDK's answer is obtained by adding `_meta.progressToken` to the same request (a call with a
 * progress token goes to the SDK transport; a call this short sends no progress notification).
 */
import { type Server as HttpServer, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { type Capture, failureCapture, utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Principal, TokenTable } from '../src/auth/tokens.js';
import { Executor } from '../src/executor/executor.js';
import type { ExecuteRequest, ExecuteResult } from '../src/executor/request.js';
import { McpDoor } from '../src/mcp/door.js';
import { resolveServerConfig } from '../src/config.js';
import { FakeInjection } from './fake-injection.js';

const TOKEN = 'alice-token-123';
const anySchema = { type: 'object' };

let router: FakeInjection;
let door: McpDoor;
let http: HttpServer;
let port: number;
let executions: Promise<ExecuteResult>[];
let auth: TokenTable;

beforeEach(async () => {
  router = new FakeInjection();
  router.list = [
    { name: 'echo', inputSchema: anySchema },
    { name: 'slow', inputSchema: anySchema },
  ];
  router.handlers.set('echo', async (call): Promise<Capture> => ({ stdout: utf8(JSON.stringify(call.input)), stderr: utf8(''), exitCode: 0 }));
  router.handlers.set(
    'slow',
    (call) => new Promise((resolve) => call.signal.addEventListener('abort', () => resolve(failureCapture('cancelled', 'stopped')), { once: true })),
  );
  executions = [];
  const options = resolveServerConfig({});
  const executor = new Executor({ injection: router, options: options.executor });
  const spy = {
    execute(req: ExecuteRequest): Promise<ExecuteResult> {
      const pending = executor.execute(req);
      executions.push(pending);
      return pending;
    },
  };
  auth = new TokenTable([], [{ name: 'alice', token: TOKEN }]);
  door = new McpDoor({ executor: spy, tools: router, auth, options: options.mcp });
  http = createServer((req, res) => void door.handle(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  port = (http.address() as AddressInfo).port;
});

afterEach(async () => {
  await door.close();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
});

const baseHeaders = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** POST `body` on a fresh connection and return the raw response bytes (up to the close), one character per byte. */
function rawPost(body: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const lines = Object.entries({ ...headers, host: `127.0.0.1:${port}`, 'content-length': String(Buffer.byteLength(body)), connection: 'close' });
    socket.end(`POST /mcp HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`);
    let text = '';
    socket.setEncoding('latin1'); // one character per byte: chunk sizes count bytes
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
}

async function session(): Promise<Record<string, string>> {
  const res = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: baseHeaders,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await res.text();
  const headers = { ...baseHeaders, 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  await (await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).text();
  return headers;
}

/** The raw answers to a call with `params`: the door's own, then the SDK's (same call, with a progress token). */
async function bothAnswers(headers: Record<string, string>, id: string | number, params: Record<string, unknown>): Promise<[string, string]> {
  const meta = (params._meta as Record<string, unknown> | undefined) ?? {};
  const own = await rawPost(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }), headers);
  const sdk = await rawPost(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { ...params, _meta: { ...meta, progressToken: 'p' } } }), headers);
  return [unframed(own), unframed(sdk)];
}

/**
 * A raw HTTP/1.1 response without its `Date` and framing: the SDK's Node adapter gives an answer
 * complete within its first timer tick a `content-length` and a later one chunks (timing decides,
 * not the answer), so head and body are compared without either: the body de-chunked.
 */
function unframed(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw
    .slice(0, split)
    .split('\r\n')
    .filter((line) => !/^(date|content-length|transfer-encoding):/i.test(line));
  let body = raw.slice(split + 4);
  if (/\r\ntransfer-encoding: chunked/i.test(raw.slice(0, split))) {
    let plain = '';
    for (let at = 0; ;) {
      const eol = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, eol), 16);
      if (size === 0) break;
      plain += body.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
    body = plain;
  }
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

describe("the door's own answer to a plain tools/call", () => {
  it.each([
    ['a completed call', 'echo', { a: [1, 'two', { three: null }] }],
    ['a call of a tool nobody serves (127)', 'missing', {}],
    ['a call with non-UTF-8 output (base64)', 'bytes', {}],
    ['a call answered by a tool of an MCP server (its content and structured result)', 'mcp', {}],
    ['a call answered with MCP content blocks only', 'blocks', {}],
    ['a call the executor refuses as misuse (an empty tool name: -32602)', '', {}],
  ])('is byte for byte the SDK transport’s answer: %s', async (_what, name, args) => {
    router.handlers.set('bytes', async () => ({ stdout: new Uint8Array([0xff, 0xfe, 0x41]), stderr: utf8('warn\n'), exitCode: 3 }));
    router.handlers.set('mcp', async () => ({
      stdout: utf8('{"x":1}'),
      stderr: utf8(''),
      exitCode: 0,
      content: [
        { type: 'text', text: 'x is 1' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA', annotations: { priority: 1 } },
      ],
      structured: { x: 1 },
    }));
    router.handlers.set('blocks', async () => ({
      stdout: utf8('hi'),
      stderr: utf8(''),
      exitCode: 0,
      content: [{ type: 'resource_link', uri: 'file:///a', name: 'a', extra: 'kept?' }],
    }));
    const headers = await session();
    for (const id of [1, 'call-☃']) {
      const [own, sdk] = await bothAnswers(headers, id, { name, arguments: args });
      expect(own).toBe(sdk);
      expect(own).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(own).toMatch(/\r\n\r\nevent: message\ndata: \{"(result|jsonrpc)":.*\n\n$/);
    }
  });

  it('answers with the same bytes as the SDK for a call with a deadline, a workspace and trace context', async () => {
    const headers = await session();
    const _meta = { 'toolwire/deadlineMs': 5000, 'toolwire/workspace': '/w', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const [own, sdk] = await bothAnswers(headers, 9, { name: 'echo', arguments: {}, _meta });
    expect(own).toBe(sdk);
    expect(router.routed.map((c) => [c.deadlineMs, c.workspace])).toEqual([
      [5000, '/w'],
      [5000, '/w'],
    ]);
  });
});

describe('what the SDK transport still serves, and how a plain call ends', () => {
  const post = (headers: Record<string, string>, message: object) =>
    fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers, body: JSON.stringify(message) });

  it('answers a plain call without the SDK transport, and hands it a call with a progress token, a batch or an unsupported protocol version', async () => {
    const headers = await session();
    const handled = vi.spyOn(NodeStreamableHTTPServerTransport.prototype, 'handleRequest');
    try {
      await (await post(headers, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } })).text();
      expect(handled).not.toHaveBeenCalled();
      await (await post(headers, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', _meta: { progressToken: 1 } } })).text();
      await (await post(headers, [{ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo' } }])).text();
      const refused = await post({ ...headers, 'mcp-protocol-version': '1999-01-01' }, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo' } });
      expect(refused.status).toBe(400);
      await refused.text();
      expect(handled).toHaveBeenCalledTimes(3);
    } finally {
      handled.mockRestore();
    }
  });

  it('writes no answer for a plain call cancelled by notifications/cancelled (130); its stream ends with its session', async () => {
    const headers = await session();
    const call = post(headers, { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await expect.poll(() => executions.length).toBe(1);
    await (await post(headers, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'test' } })).text();
    expect(await exitCodeOf(executions[0]!)).toBe(130);
    const res = await call; // the headers, after the hold
    expect(res.status).toBe(200);
    const body = res.text();
    const del = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'DELETE', headers });
    expect(del.status).toBe(200);
    expect(await body).toBe('');
  });

  it('answers the calls of a revoked caller token 130 (plain and SDK-served) before it closes their session', async () => {
    const headers = await session();
    const plain = post(headers, { jsonrpc: '2.0', id: 'p1', method: 'tools/call', params: { name: 'slow', arguments: {} } });
    const served = post(headers, { jsonrpc: '2.0', id: 's1', method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { progressToken: 't' } } });
    await expect.poll(() => executions.length).toBe(2);
    auth.update([], [{ name: 'alice', token: 'alice-token-rotated-456' }]);
    expect(await door.revoke((principal) => auth.isCurrent(principal as Principal), 5_000)).toBe(1);
    expect(door.sessionCount).toBe(0);
    for (const [pending, id] of [
      [plain, 'p1'],
      [served, 's1'],
    ] as const) {
      const res = await pending;
      expect(res.status).toBe(200);
      const answers = (await res.text())
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as { id?: unknown; result?: { isError?: boolean; content?: { text: string }[] } })
        .filter((m) => m.id === id);
      expect(answers).toHaveLength(1);
      expect(answers[0]!.result?.isError).toBe(true);
      expect(answers[0]!.result?.content?.[0]?.text).toMatch(/^Exit code: 130\n/);
    }
  });

  it('stops a plain call whose session is deleted (130) and ends its stream without an answer', async () => {
    const headers = await session();
    const call = post(headers, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    await expect.poll(() => executions.length).toBe(1);
    const del = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'DELETE', headers });
    expect(del.status).toBe(200);
    expect(await exitCodeOf(executions[0]!)).toBe(130);
    const res = await call;
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(await res.text()).toBe('');
  });
});

async function exitCodeOf(pending: Promise<ExecuteResult>): Promise<number | undefined> {
  const result = await pending;
  return result.outcome === 'completed' ? result.capture.exitCode : undefined;
}
