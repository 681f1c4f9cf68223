/**
 * Issue 5 §5 — inputs are data: `__proto__`, `constructor` and `prototype` keys in frames and in
 * call inputs never reach an object prototype. Runs a real server in this process, so
 * `({}).polluted` here is the server's own.
 */
import { once } from 'node:events';
import { ToolwireServer, type ToolControlRequest } from '@toolwire/server';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, defer, nextFrame, text, waitFor } from '../helpers.js';

afterEach(cleanup);

const HOSTILE_INPUT =
  '{"__proto__":{"polluted":"input"},"constructor":{"prototype":{"polluted":"input"}},"prototype":{"polluted":"input"},"nested":{"__proto__":{"polluted":"nested"},"a":1}}';

function prototypeIsClean(): void {
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_KEYS);
  expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getPrototypeOf({})).toBe(Object.prototype);
}
const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort();

async function startServer(seen: ToolControlRequest[]) {
  const server = new ToolwireServer({
    hosts: [{ name: 'alpha', token: HOST_TOKEN }],
    callers: [{ name: 'agent', token: CALLER_TOKEN }],
    toolControl: (request) => {
      seen.push(request);
      return { action: 'pass' };
    },
  });
  const info = await server.listen(0, '127.0.0.1');
  defer(() => server.close());
  return { server, ...info };
}

/** POST one JSON-RPC text to the MCP door; resolves with the JSON-RPC answer (JSON or SSE) and the session id. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON-RPC answer of any shape (result or error), as JSON.parse gives it
async function mcpPost(url: string, body: string, session?: string): Promise<{ message: any; session: string | null }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${CALLER_TOKEN}`,
      'mcp-protocol-version': '2025-06-18',
      ...(session ? { 'mcp-session-id': session } : {}),
    },
    body,
  });
  const raw = await response.text();
  const data = raw.split('\n').find((line) => line.startsWith('data: '));
  const json = data ? data.slice(6) : raw;
  return { message: json ? JSON.parse(json) : undefined, session: response.headers.get('mcp-session-id') };
}

/** A raw host that answers every call with the call frame's own text as stdout. */
async function echoingRawHost(url: string): Promise<{ ws: WebSocket; frames: string[] }> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${HOST_TOKEN}` } });
  ws.on('error', () => {});
  defer(() => {
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  });
  await once(ws, 'open');
  const frames: string[] = [];
  ws.on('message', (data: Buffer) => {
    const raw = data.toString('utf8');
    frames.push(raw);
    const message = JSON.parse(raw) as { type: string; id: string };
    if (message.type === 'call') ws.send(JSON.stringify({ type: 'result', id: message.id, stdout: raw, stderr: '', exitCode: 0 }));
  });
  const welcome = nextFrame(ws, 'welcome');
  ws.send('{"type":"hello","protocol":1,"software":"hostile"}');
  await welcome;
  return { ws, frames };
}

describe('prototype pollution', () => {
  it('frames with __proto__ / constructor / prototype keys pollute nothing and leave the session usable', async () => {
    const seen: ToolControlRequest[] = [];
    const s = await startServer(seen);
    const { ws } = await echoingRawHost(s.url);
    const advertised = nextFrame(ws, 'advertised');
    // Raw JSON text: after JSON.parse these are own keys, the way an attacker's frame arrives.
    ws.send(
      '{"type":"advertise","tools":[' +
        '{"name":"bad1","inputSchema":{"type":"object"},"__proto__":{"polluted":"spec"}},' +
        '{"name":"bad2","inputSchema":{"type":"object","__proto__":{"polluted":"schema"},"constructor":{"prototype":{"polluted":"schema"}}}},' +
        '{"name":"echo","inputSchema":{"type":"object","properties":{"constructor":{"type":"object"},"prototype":{"type":"object"}}}}' +
        ']}',
    );
    const answer = await advertised;
    expect(answer.accepted).toEqual([{ name: 'echo', as: 'alpha__echo' }]);
    expect((answer.rejected as { name: string }[]).map((r) => r.name)).toEqual(['bad1', 'bad2']);
    for (const frame of [
      '{"__proto__":{"polluted":"frame"},"type":"result","id":"x","stdout":"","stderr":"","exitCode":0}',
      '{"type":"result","id":"x","stdout":"","stderr":"","exitCode":0,"constructor":{"prototype":{"polluted":"frame"}}}',
      '{"type":{"__proto__":{"polluted":"type"}}}',
      '{"type":"__proto__"}',
      '{"type":"constructor","id":"__proto__"}',
    ]) {
      ws.send(frame);
    }
    // The session survives wrong-shape frames (fewer than maxBadFrames) and still answers calls.
    const result = await s.server.executor.execute({ name: 'alpha__echo', input: JSON.parse(HOSTILE_INPUT), agent: 'agent' });
    expect(result.outcome).toBe('completed');
    if (result.outcome !== 'completed') return;
    expect(result.capture.exitCode).toBe(0);
    // The input travelled as data: the host saw every key as an own property of the JSON object.
    const frame = JSON.parse(text(result.capture.stdout)) as { input: Record<string, unknown> };
    expect(Object.keys(frame.input)).toEqual(['__proto__', 'constructor', 'prototype', 'nested']);
    expect(Object.getOwnPropertyDescriptor(frame.input, '__proto__')?.value).toEqual({ polluted: 'input' });
    expect(Object.keys(frame.input.nested as object)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(seen[0]!.input)).toBe(Object.prototype);
    prototypeIsClean();
    // A wrong-shape advertise ends the session (close 1002, the ajv reason naming the key); nothing is polluted.
    const closed = once(ws, 'close');
    ws.send('{"type":"advertise","tools":[],"prototype":{"polluted":"frame"}}');
    const [code, reason] = await closed;
    expect(code).toBe(1002);
    expect(String(reason)).toBe('advertise: / must NOT have additional properties ("prototype")');
    prototypeIsClean();
  });

  it('MCP arguments with a __proto__ key are refused 65 naming it (never silently dropped), other such keys reach the host as plain data, and nothing is polluted', async () => {
    const seen: ToolControlRequest[] = [];
    const s = await startServer(seen);
    const { ws } = await echoingRawHost(s.url);
    const advertised = nextFrame(ws, 'advertised');
    ws.send(JSON.stringify({ type: 'advertise', tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
    await advertised;
    const init = await mcpPost(
      s.mcpUrl,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    );
    const session = init.session!;
    await mcpPost(s.mcpUrl, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), session);
    // Raw request text: the hostile keys are own keys of the parsed arguments, at every level.
    // Such keys on the JSON-RPC envelope itself: the SDK refuses the message; nothing is polluted.
    const envelope = await mcpPost(
      s.mcpUrl,
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{},"__proto__":{"polluted":"params"}},"__proto__":{"polluted":"rpc"}}`,
      session,
    );
    expect(envelope.message.error).toBeDefined();
    prototypeIsClean();
    // A "__proto__" key anywhere in the arguments cannot reach the tool unchanged through the SDK's
    // object copy: the call is refused with 65 and the key's path (issue 15), nothing routed.
    const refused = await mcpPost(s.mcpUrl, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":${HOSTILE_INPUT}}}`, session);
    if (!refused.message?.result) throw new Error(JSON.stringify(refused));
    const no = refused.message.result as { structuredContent: { stderr: string; exitCode: number } };
    expect(no.structuredContent.exitCode).toBe(65);
    expect(no.structuredContent.stderr).toMatch(/input key "arguments\.__proto__" cannot be passed to a tool unchanged/);
    prototypeIsClean();
    // "constructor" and "prototype" keys, at every level, arrive as own data.
    const called = await mcpPost(
      s.mcpUrl,
      `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"constructor":{"prototype":{"polluted":"input"}},"prototype":{"polluted":"input"},"nested":{"constructor":{"a":1},"a":1}}}}`,
      session,
    );
    if (!called.message?.result) throw new Error(JSON.stringify(called));
    const result = called.message.result as { structuredContent: { stdout: string; exitCode: number } };
    expect(result.structuredContent.exitCode).toBe(0);
    const input = (JSON.parse(result.structuredContent.stdout) as { input: Record<string, unknown> }).input;
    expect(Object.keys(input)).toEqual(['constructor', 'prototype', 'nested']);
    expect(input.constructor).toEqual({ prototype: { polluted: 'input' } });
    expect(Object.keys(input.nested as object)).toEqual(['constructor', 'a']);
    await waitFor(() => seen.length === 2, 'tool control to see both calls');
    for (const request of seen) expect(Object.getPrototypeOf(request.input)).toBe(Object.prototype);
    prototypeIsClean();
  });
});
