import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { type Capture, failureCapture, utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenTable } from '../src/auth/tokens.js';
import { Executor } from '../src/executor/executor.js';
import type { ExecuteRequest, ExecuteResult } from '../src/executor/request.js';
import { McpDoor } from '../src/mcp/door.js';
import { OUTPUT_SCHEMA } from '../src/mcp/tool-result.js';
import { resolveServerConfig } from '../src/config.js';
import { FakeInjection } from './fake-injection.js';

const echoSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
const TOKENS = { alice: 'alice-token-123', limited: 'limited-token-456', host: 'host-token-789' };

let router: FakeInjection;
let door: McpDoor;
let http: HttpServer;
let url: string;
let clients: Client[];
let executions: Promise<ExecuteResult>[];

function capture(stdout: string | Uint8Array, stderr = '', exitCode = 0): Capture {
  return { stdout: typeof stdout === 'string' ? utf8(stdout) : stdout, stderr: utf8(stderr), exitCode };
}

async function connect(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

beforeEach(async () => {
  router = new FakeInjection();
  router.list = [{ name: 'echo', description: 'Echo text', inputSchema: echoSchema }];
  router.handlers.set('echo', async (call) => capture(`${(call.input as { text: string }).text}\n`));
  const options = resolveServerConfig();
  const executor = new Executor({ injection: router, options: options.executor });
  executions = [];
  const spy = {
    execute(req: ExecuteRequest): Promise<ExecuteResult> {
      const pending = executor.execute(req);
      executions.push(pending);
      return pending;
    },
  };
  const tokens = new TokenTable(
    [{ name: 'h1', token: TOKENS.host }],
    [
      { name: 'alice', token: TOKENS.alice },
      { name: 'limited', token: TOKENS.limited, grant: ['other'] },
    ],
  );
  door = new McpDoor({ executor: spy, tools: router, auth: tokens, options: options.mcp });
  http = createServer((req, res) => {
    if (req.url?.startsWith('/mcp')) void door.handle(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  clients = [];
});

afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await door.close();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
});

describe('authentication', () => {
  async function post(headers: Record<string, string>): Promise<Response> {
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
  }

  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer nope' }],
    ['a host token', { authorization: `Bearer ${TOKENS.host}` }],
    ['a non-bearer scheme', { authorization: `Basic ${TOKENS.alice}` }],
  ])('answers 401 with a JSON-RPC error that says what is needed, and a Bearer challenge, for %s', async (label, headers) => {
    const res = await post(headers);
    expect(res.status).toBe(401);
    const sent = label !== 'no Authorization header';
    const description = sent ? 'the bearer token is not a caller token of this server' : 'a caller bearer token is required';
    const metadata = `${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`;
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer ${sent ? 'error="invalid_token", ' : ''}error_description="${description}", resource_metadata="${metadata}"`,
    );
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message: `Unauthorized: ${description} (header "Authorization: Bearer <caller token>"); an admin makes one with: toolwire token add caller NAME (it prints the token once)`,
      },
      id: null,
    });
  });

  it('refuses the SDK client with a wrong token', async () => {
    await expect(connect('wrong')).rejects.toThrow();
    expect(door.sessionCount).toBe(0);
  });

  it("does not let a caller use another caller's session", async () => {
    const client = await connect(TOKENS.alice);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKENS.limited}`,
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
  });
});

describe('tools', () => {
  it('lists the advertised tools with their inputSchema and the output schema', async () => {
    const client = await connect(TOKENS.alice);
    const { tools } = await client.listTools();
    expect(tools).toEqual([{ name: 'echo', description: 'Echo text', inputSchema: echoSchema, outputSchema: OUTPUT_SCHEMA }]);
  });

  it('lists tools sorted by name whatever order their hosts advertised them in, and says in its instructions how to read a result', async () => {
    router.list = ['zeta', 'alpha', 'mid'].map((name) => ({ name, inputSchema: echoSchema }));
    const client = await connect(TOKENS.alice);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['alpha', 'mid', 'zeta']);
    const instructions = client.getInstructions() ?? '';
    expect(instructions).toMatch(/Exit code: N/);
    expect(instructions).toMatch(/69 host not connected/);
    expect(instructions).toMatch(/130 stopped/);
  });

  it('lists only the tools the caller is granted', async () => {
    const client = await connect(TOKENS.limited);
    expect((await client.listTools()).tools).toEqual([]);
  });

  it('answers tools/call with the envelope and structured content', async () => {
    router.handlers.set('echo', async () => capture('out', 'warn\n', 3));
    const client = await connect(TOKENS.alice);
    await client.listTools(); // caches the output schema, so the client validates structuredContent
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Exit code: 3\nout\n--- stderr ---\nwarn\n' }],
      isError: true,
      structuredContent: { stdout: 'out', stderr: 'warn\n', exitCode: 3 },
    });
    expect(router.routed[0]).toMatchObject({ name: 'echo', input: { text: 'hi' }, agent: 'alice', workspace: '' });
  });

  it('sends bytes that are not UTF-8 as base64 in structured content', async () => {
    router.handlers.set('echo', async () => capture(Uint8Array.from([0xff, 0x00, 0x41])));
    const client = await connect(TOKENS.alice);
    await client.listTools();
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result.structuredContent).toEqual({ stdout: Buffer.from([0xff, 0x00, 0x41]).toString('base64'), stdoutEncoding: 'base64', stderr: '', exitCode: 0 });
    expect(result.isError).toBe(false);
  });

  it('passes the deadline and workspace from _meta to the router', async () => {
    const client = await connect(TOKENS.alice);
    await client.callTool({ name: 'echo', arguments: { text: 'hi' }, _meta: { 'toolwire/deadlineMs': 1500, 'toolwire/workspace': '/work/a' } });
    expect(router.routed[0]).toMatchObject({ deadlineMs: 1500, workspace: '/work/a' });
  });

  it('rejects a malformed deadline in _meta as invalid params', async () => {
    const client = await connect(TOKENS.alice);
    await expect(client.callTool({ name: 'echo', arguments: { text: 'hi' }, _meta: { 'toolwire/deadlineMs': -1 } })).rejects.toThrow(/deadlineMs/);
    expect(router.routed).toHaveLength(0);
  });

  it('answers an ungranted tool as declined, with isError and nothing routed', async () => {
    const client = await connect(TOKENS.limited);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    const reason = 'tool "echo" is not granted to agent "limited"';
    expect(result).toEqual({ content: [{ type: 'text', text: `toolwire: ${reason}` }], isError: true, structuredContent: { declined: true, reason } });
    expect(router.routed).toHaveLength(0);
  });

  it('answers an unknown tool with capture 127', async () => {
    const client = await connect(TOKENS.alice);
    const result = await client.callTool({ name: 'missing', arguments: {} });
    expect(result.structuredContent).toMatchObject({ exitCode: 127 });
    expect(result.isError).toBe(true);
  });
});

describe('session limit', () => {
  const headers = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${TOKENS.alice}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...extra,
  });

  /** Open a session with a raw initialize POST; returns its id (or the HTTP status when refused). */
  async function initialize(): Promise<string | number> {
    const res = await fetch(url, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    await res.text();
    return res.headers.get('mcp-session-id') ?? res.status;
  }

  async function listWith(sessionId: string): Promise<number> {
    const res = await fetch(url, {
      method: 'POST',
      headers: headers({ 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    await res.text();
    return res.status;
  }

  async function withLimit(maxSessions: number): Promise<void> {
    await door.close();
    door = new McpDoor({
      executor: new Executor({ injection: router, options: resolveServerConfig().executor }),
      tools: router,
      auth: new TokenTable([], [{ name: 'alice', token: TOKENS.alice }]),
      options: resolveServerConfig({ mcpMaxSessions: maxSessions }).mcp,
    });
  }

  it('evicts the least recently active idle session at the limit', async () => {
    await withLimit(1);
    const first = await initialize();
    expect(typeof first).toBe('string');
    expect(await listWith(first as string)).toBe(200);
    const second = await initialize();
    expect(typeof second).toBe('string');
    expect(door.sessionCount).toBe(1);
    expect(await listWith(first as string)).toBe(404);
    expect(await listWith(second as string)).toBe(200);
  });

  it('answers 503 when every session has a request open', async () => {
    await withLimit(1);
    const first = (await initialize()) as string;
    const stream = new AbortController();
    const get = await fetch(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${TOKENS.alice}`, accept: 'text/event-stream', 'mcp-session-id': first, 'mcp-protocol-version': '2025-06-18' },
      signal: stream.signal,
    });
    expect(get.status).toBe(200);
    expect(await initialize()).toBe(503);
    stream.abort();
  });
});

describe('notifications and cancellation', () => {
  it('sends notifications/tools/list_changed when the router tool set changes', async () => {
    const client = await connect(TOKENS.alice);
    let changed!: () => void;
    const received = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
    router.list = [...router.list, { name: 'other', inputSchema: { type: 'object' } }];
    // The client opens its notification stream (GET) asynchronously after initialize: re-emit, bounded, until heard.
    let heard = false;
    void received.then(() => (heard = true));
    for (let i = 0; i < 200 && !heard; i++) {
      router.emit('toolsChanged');
      await Promise.race([received, new Promise((r) => setTimeout(r, 25))]);
    }
    expect(heard).toBe(true);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo', 'other']);
  });

  it('stops the call with 130 when the MCP client cancels it', async () => {
    let entered!: () => void;
    const routed = new Promise<void>((resolve) => (entered = resolve));
    router.handlers.set(
      'echo',
      (call) =>
        new Promise((resolve) => {
          call.signal.addEventListener('abort', () => resolve(failureCapture('cancelled', 'stopped')), { once: true });
          entered();
        }),
    );
    const client = await connect(TOKENS.alice);
    const ac = new AbortController();
    const call = client.callTool({ name: 'echo', arguments: { text: 'hi' } }, undefined, { signal: ac.signal });
    await routed;
    ac.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    const result = await executions[0]!;
    expect(result.outcome === 'completed' && result.capture.exitCode).toBe(130);
  });

  it('ends the session on DELETE', async () => {
    const client = await connect(TOKENS.alice);
    expect(door.sessionCount).toBe(1);
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    expect(door.sessionCount).toBe(0);
  });
});
