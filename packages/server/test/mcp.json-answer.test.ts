/**
 * The door's JSON answers (`json-answer.ts`): a session's POST with one request that asks for no
 * progress and no output gets one `application/json` body; a batch, a notification or a bad body
 * goes the SDK transport's way or gets the SDK's error. A real McpDoor on node:http at 127.0.0.1:0,
 * a bare HTTP client (so the test sees content types and status codes).
 */
import { type IncomingMessage, type Server as HttpServer, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenTable } from '../src/auth/tokens.js';
import { Executor } from '../src/executor/executor.js';
import { McpDoor } from '../src/mcp/door.js';
import { resolveServerConfig } from '../src/options.js';
import { FakeInjection } from './fake-injection.js';

const TOKEN = 'json-answer-caller-token-1';
const MAX_BODY = 64 * 1024;

let door: McpDoor;
let http: HttpServer;
let url: URL;

beforeEach(async () => {
  const router = new FakeInjection();
  router.list = [{ name: 'echo', description: 'Echo', inputSchema: { type: 'object' } }];
  router.handlers.set('echo', async (call) => ({ stdout: utf8(JSON.stringify(call.input)), stderr: utf8(''), exitCode: 0 }));
  const options = resolveServerConfig({ mcpMaxRequestBodyBytes: MAX_BODY });
  const executor = new Executor({ injection: router, options: options.executor });
  door = new McpDoor({ executor, tools: router, auth: new TokenTable([], [{ name: 'agent', token: TOKEN }]), options: options.mcp });
  http = createServer((req, res) => void door.handle(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
});

afterEach(async () => {
  await door.close();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
});

function post(body: string, sessionId?: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (sessionId) Object.assign(headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' });
    const req = httpRequest(url, { method: 'POST', headers }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

async function text(res: IncomingMessage): Promise<string> {
  let out = '';
  for await (const chunk of res) out += String(chunk);
  return out;
}

async function session(): Promise<string> {
  const init = await post(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  );
  const id = init.headers['mcp-session-id'] as string;
  await text(init);
  await text(await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), id));
  return id;
}

describe('JSON answers', () => {
  it('answers a plain tools/call with one application/json body carrying the session id', async () => {
    const id = await session();
    const res = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 } } }), id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['mcp-session-id']).toBe(id);
    expect(JSON.parse(await text(res))).toMatchObject({ jsonrpc: '2.0', id: 5, result: { structuredContent: { exitCode: 0, stdout: '{"a":1}' } } });
  });

  it('answers an invalid request (unknown method) with its JSON-RPC error in one body', async () => {
    const id = await session();
    const res = await post(JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'no/such' }), id);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(await text(res))).toMatchObject({ id: 'x', error: { code: -32601 } });
  });

  it('hands a batch to the SDK transport, which answers it', async () => {
    const id = await session();
    const res = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]), id);
    expect(res.statusCode).toBe(200);
    expect(await text(res)).toMatch(/"tools":\[/);
  });

  it('refuses a body over mcpMaxRequestBodyBytes with 413 and the body that is not JSON with 400 -32700', async () => {
    const id = await session();
    const big = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { pad: 'x'.repeat(MAX_BODY) } } }), id);
    expect(big.statusCode).toBe(413);
    expect(JSON.parse(await text(big))).toMatchObject({ error: { code: -32000, message: `Payload Too Large: Request body must not exceed ${MAX_BODY} bytes` } });
    const bad = await post('{"jsonrpc":', id);
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(await text(bad))).toMatchObject({ error: { code: -32700 } });
    // The session still answers.
    const ok = await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), id);
    expect(JSON.parse(await text(ok))).toMatchObject({ id: 2, result: { tools: [{ name: 'echo' }] } });
  });
});
