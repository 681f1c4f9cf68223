/**
 * Issue 5 §3 and §6 — origin and transport policy (browser upgrades refused, permessage-deflate off
 * unless enabled and then bounded by maxPayload) and the limits on what a peer may open or send:
 * total connections, connections per host identity, hello timeout, frame size, tools per host,
 * description length.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, type ClientOptions } from 'ws';
import { ToolwireServer } from '../src/toolwire-server.js';
import { ALPHA, BETA, CALLER, cleanups, drainCleanups, start } from './security.harness.js';
import { SLOW, closeCode, helloAndAdvertise } from './endpoint.harness.js';

afterEach(drainCleanups);

type Dial = { ws?: WebSocket; status?: number; response?: IncomingMessage };

/** Dial as a host; resolves with the open socket or the refusal's HTTP status. */
async function dial(url: string, token: string, headers: Record<string, string> = {}, options: ClientOptions = {}): Promise<Dial> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}`, ...headers }, ...options });
  ws.on('error', () => {});
  cleanups.push(() => {
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  });
  return Promise.race([
    once(ws, 'open').then(() => ({ ws })),
    once(ws, 'unexpected-response').then(([, res]) => {
      (res as IncomingMessage).resume();
      return { status: (res as IncomingMessage).statusCode!, response: res as IncomingMessage };
    }),
  ]);
}

function mcpInit(mcpUrl: string, headers: Record<string, string>): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${CALLER}`, ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
  });
}

describe('origin policy', () => {
  it('refuses a browser-originated upgrade (any Origin header) with 403 when no origin is allowed, even with a valid token', async () => {
    const s = await start();
    for (const origin of ['https://evil.example', 'null', `http://127.0.0.1:${s.port}`]) {
      const refused = await dial(s.url, ALPHA, { origin });
      expect(refused.status).toBe(403);
    }
    expect(s.server.hostEndpoint.sessionCount).toBe(0);
    expect((await dial(s.url, ALPHA)).ws).toBeDefined(); // no Origin: a tool host, not a browser
  });

  it('accepts only the configured origins, case-insensitively', async () => {
    const s = await start({ allowedOrigins: ['https://Console.Example.com'] });
    expect((await dial(s.url, ALPHA, { origin: 'https://console.example.com' })).ws).toBeDefined();
    expect((await dial(s.url, BETA, { origin: 'https://console.example.com.evil.example' })).status).toBe(403);
  });

  it('applies the same policy to the MCP door', async () => {
    const s = await start({ allowedOrigins: ['https://console.example.com'] });
    expect((await mcpInit(s.mcpUrl, { origin: 'https://evil.example' })).status).toBe(403);
    const allowed = await mcpInit(s.mcpUrl, { origin: 'https://console.example.com' });
    expect(allowed.status).toBe(200);
    await allowed.text();
  });

  it('the MCP door also accepts the server’s own origin (a page it served, same scheme and Host), never another loopback origin', async () => {
    const s = await start();
    const own = await mcpInit(s.mcpUrl, { origin: `http://127.0.0.1:${s.port}` });
    expect(own.status).toBe(200);
    await own.text();
    expect((await mcpInit(s.mcpUrl, { origin: `http://127.0.0.1:${s.port + 1}` })).status).toBe(403);
    expect((await mcpInit(s.mcpUrl, { origin: `https://127.0.0.1:${s.port}` })).status).toBe(403);
    expect((await mcpInit(s.mcpUrl, { origin: `http://localhost:${s.port}` })).status).toBe(403); // Host says 127.0.0.1
  });

  it('refuses a non-array allowedOrigins at construction', () => {
    expect(() => new ToolwireServer({ allowedOrigins: 'https://x' as never })).toThrow(TypeError);
  });
});

describe('permessage-deflate', () => {
  it('is not negotiated by default, even when the host offers it', async () => {
    const s = await start();
    const { ws } = await dial(s.url, ALPHA, {}, { perMessageDeflate: true });
    expect(ws!.extensions).toBe('');
  });

  it('when enabled, bounds the inflated message by maxPayload: a small compressed bomb closes 1009', async () => {
    const s = await start({ perMessageDeflate: true, maxPayload: 64 * 1024 });
    const { ws } = await dial(s.url, ALPHA, {}, { perMessageDeflate: true });
    expect(ws!.extensions).toMatch(/permessage-deflate/);
    await helloAndAdvertise(ws!, [SLOW]);
    const closed = closeCode(ws!);
    const bomb = JSON.stringify({ type: 'advertise', tools: [{ name: 'x', description: 'a'.repeat(8 * 1024 * 1024), inputSchema: { type: 'object' } }] });
    ws!.send(bomb, { compress: true });
    expect(await closed).toBe(1009);
  });
});

describe('connection limits', () => {
  it('refuses an upgrade over maxConnections with 503 (counting sockets that have not said hello)', async () => {
    const s = await start({ maxConnections: 2, maxConnectionsPerHost: 10 });
    expect((await dial(s.url, ALPHA)).ws).toBeDefined();
    expect((await dial(s.url, BETA)).ws).toBeDefined();
    const refused = await dial(s.url, ALPHA);
    expect(refused.status).toBe(503);
    expect(refused.response!.headers['retry-after']).toBe('1');
    expect(s.server.hostEndpoint.sessionCount).toBe(2);
  });

  it('refuses more than maxConnectionsPerHost open connections of one identity with 429; others may still connect', async () => {
    const s = await start({ maxConnectionsPerHost: 2 });
    const first = await dial(s.url, ALPHA);
    await dial(s.url, ALPHA);
    expect((await dial(s.url, ALPHA)).status).toBe(429);
    expect((await dial(s.url, BETA)).ws).toBeDefined();
    // A closed connection frees its slot.
    first.ws!.close();
    await once(first.ws!, 'close');
    await expect.poll(async () => (await dial(s.url, ALPHA)).ws !== undefined, { timeout: 3_000 }).toBe(true);
  });

  it('closes a socket that upgrades and says nothing after helloTimeoutMs (1008)', async () => {
    const s = await start({ helloTimeoutMs: 150 });
    const { ws } = await dial(s.url, ALPHA);
    const began = Date.now();
    expect(await closeCode(ws!)).toBe(1008);
    expect(Date.now() - began).toBeLessThan(2_000);
    await expect.poll(() => s.server.hostEndpoint.sessionCount, { timeout: 2_000 }).toBe(0);
  });
});

describe('frame and advertise limits', () => {
  it('closes 1009 for a frame over maxPayload', async () => {
    const s = await start({ maxPayload: 4096 });
    const { ws } = await dial(s.url, ALPHA);
    const closed = closeCode(ws!);
    ws!.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'x'.repeat(8192) }));
    expect(await closed).toBe(1009);
  });

  it('rejects tools beyond maxToolsPerHost and descriptions over maxDescriptionChars, with reasons', async () => {
    const s = await start({ maxToolsPerHost: 2, maxDescriptionChars: 10 });
    const { ws } = await dial(s.url, ALPHA);
    const tool = (name: string, description = 'short') => ({ name, description, inputSchema: { type: 'object' } });
    const { advertised } = await helloAndAdvertise(ws!, [tool('a'), tool('b', 'd'.repeat(11)), tool('c'), tool('d')]);
    expect(advertised.accepted).toEqual([
      { name: 'a', as: 'alpha__a' },
      { name: 'c', as: 'alpha__c' },
    ]);
    expect(advertised.rejected).toEqual([
      { name: 'b', reason: 'description is longer than 10 characters' },
      { name: 'd', reason: 'too many tools: at most 2 per host' },
    ]);
  });

  it('settles a call 75 at once when the host already has maxInFlightPerHost calls pending', async () => {
    const s = await start({ maxInFlightPerHost: 2 });
    const { ws } = await dial(s.url, ALPHA);
    await helloAndAdvertise(ws!, [SLOW]);
    const call = () => s.server.router.route({ id: 'c', name: 'alpha__slow', input: {}, workspace: '', agent: 'agent', signal: new AbortController().signal });
    const pending = [call(), call()];
    const refused = (await call())!;
    expect(refused.exitCode).toBe(75);
    expect(Buffer.from(refused.stderr).toString()).toMatch(/2 calls in flight \(limit 2\); retry later/);
    ws!.terminate();
    expect((await Promise.all(pending)).map((c) => c!.exitCode)).toEqual([69, 69]);
  });

  it('rejects a tool name or an exposed name over 64 characters', async () => {
    const s = await start();
    const { ws } = await dial(s.url, ALPHA);
    const { advertised } = await helloAndAdvertise(ws!, [
      { name: 'n'.repeat(65), inputSchema: { type: 'object' } },
      { name: 'n'.repeat(60), inputSchema: { type: 'object' } },
    ]);
    expect(advertised.accepted).toEqual([]);
    expect((advertised.rejected as { reason: string }[]).map((r) => r.reason)).toEqual([
      'tool name must match ^[A-Za-z0-9_-]{1,64}$',
      `exposed name "alpha__${'n'.repeat(60)}" is longer than 64 characters`,
    ]);
  });
});
