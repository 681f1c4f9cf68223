/**
 * Issue 15 §7 — auth answers that help, and DNS-rebinding protection: a real `ToolwireServer` on
 * 127.0.0.1:0; raw `node:http` requests (they can send any `Host`), a raw WebSocket upgrade, and the
 * MCP SDK's own discovery and client.
 */
import { request as httpRequest } from 'node:http';
import { discoverOAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { HostPolicy, normalizeAllowedHosts } from '../src/endpoint/http-front.js';
import type { ToolwireServerOptions } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import { type ListenInfo, ToolwireServer } from '../src/toolwire-server.js';

const HOST_TOKEN = 'host-token-front-1';
const CALLER_TOKEN = 'caller-token-front-1';
const ADVICE = 'an admin makes one with: toolwire token add caller NAME';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(options: ToolwireServerOptions = {}): Promise<ListenInfo> {
  const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }], ...options });
  cleanups.push(() => server.close());
  return server.listen(0, '127.0.0.1');
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with exactly these headers (`host` included), read whole. */
function send(info: ListenInfo, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port: info.port, method, path, headers, agent: false, setHost: 'host' in headers };
    const req = httpRequest(options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
});
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Open a WebSocket upgrade with `host` as its Host header; resolves with the HTTP status of a refusal, or 101. */
function upgrade(info: ListenInfo, host: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(info.url, ['toolwire.v1'], { headers: { authorization: `Bearer ${HOST_TOKEN}`, host } });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('upgrade', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', () => {});
  });
}

describe('the 401 of the MCP door says what is needed', () => {
  it('keeps WWW-Authenticate: Bearer, adds error_description and resource_metadata, and a body naming toolwire token add caller', async () => {
    const info = await startServer();
    const origin = `http://127.0.0.1:${info.port}`;
    const none = await send(info, 'POST', '/mcp', { ...mcpHeaders, host: `127.0.0.1:${info.port}` }, initialize);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe(
      `Bearer error_description="a caller bearer token is required", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
    );
    const message = (JSON.parse(none.body) as { error: { message: string } }).error.message;
    expect(message).toMatch(
      /^Unauthorized: a caller bearer token is required \(header "Authorization: Bearer <caller token>"\); an admin makes one with: toolwire token add caller NAME/,
    );
    const wrong = await send(info, 'POST', '/mcp', { ...mcpHeaders, host: `localhost:${info.port}`, authorization: `Bearer ${HOST_TOKEN}` }, initialize);
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toMatch(
      /^Bearer error="invalid_token", error_description="the bearer token is not a caller token of this server", resource_metadata="http:\/\/localhost:\d+\//,
    );
    expect(wrong.body).not.toContain(HOST_TOKEN);
  });

  it('makes the SDK client fail with the 401 (no OAuth flow without an auth provider)', async () => {
    const info = await startServer();
    const client = new Client({ name: 'front-test', version: '1' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(info.mcpUrl)))).rejects.toThrow(/401|Unauthorized/);
  });
});

describe('OAuth discovery answers: a protected resource with no authorization server', () => {
  it('serves RFC 9728 metadata at both well-known paths, and the SDK discovery reads it', async () => {
    const info = await startServer();
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const answer = await send(info, 'GET', path, { host: `127.0.0.1:${info.port}` });
      expect(answer.status).toBe(200);
      const metadata = JSON.parse(answer.body) as Record<string, unknown>;
      expect(metadata).toMatchObject({ resource: info.mcpUrl, bearer_methods_supported: ['header'] });
      expect(metadata).not.toHaveProperty('authorization_servers');
      expect(metadata.resource_name).toContain(ADVICE);
    }
    const discovered = await discoverOAuthProtectedResourceMetadata(new URL(info.mcpUrl));
    expect(discovered.resource).toBe(info.mcpUrl);
    expect(discovered.authorization_servers).toBeUndefined();
  });

  it('answers authorization-server metadata, OpenID configuration and registration with 404 and an OAuth error naming the bearer token', async () => {
    const info = await startServer();
    for (const [method, path] of [
      ['GET', '/.well-known/oauth-authorization-server'],
      ['GET', '/.well-known/oauth-authorization-server/mcp'],
      ['GET', '/.well-known/openid-configuration'],
      ['POST', '/register'],
    ] as const) {
      const answer = await send(info, method, path, { host: `127.0.0.1:${info.port}`, 'content-type': 'application/json' }, method === 'POST' ? '{}' : undefined);
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({
        error: 'invalid_request',
        error_description: expect.stringContaining(`this server does not use OAuth: send "Authorization: Bearer <caller token>"; ${ADVICE}`),
      });
    }
    expect((await send(info, 'GET', '/elsewhere', { host: `127.0.0.1:${info.port}` })).body).toBe('{"error":"not found"}');
  });
});

describe('DNS-rebinding protection on a loopback server', () => {
  it('refuses a Host that is not a loopback name with 403 — MCP with a valid token, /healthz, well-known, and a host upgrade', async () => {
    const info = await startServer();
    const evil = { host: `evil.example:${info.port}` };
    const mcp = await send(info, 'POST', '/mcp', { ...mcpHeaders, ...evil, authorization: `Bearer ${CALLER_TOKEN}` }, initialize);
    expect(mcp.status).toBe(403);
    expect((JSON.parse(mcp.body) as { error: { message: string } }).error.message).toMatch(
      /^Forbidden: Host "evil.example:\d+" is not allowed here \(DNS-rebinding protection\): use a loopback name .* or list the name in allowedHosts$/,
    );
    for (const path of ['/healthz', '/.well-known/oauth-protected-resource']) expect((await send(info, 'GET', path, evil)).status).toBe(403);
    expect((await send(info, 'GET', '/healthz', {})).status).toBe(400); // no Host at all: node:http refuses an HTTP/1.1 request first
    expect(await upgrade(info, evil.host)).toBe(403);
  });

  it('says why in the body of a refused host upgrade, so a tool host can tell the Host check from the Origin check', async () => {
    const info = await startServer();
    const body = await new Promise<string>((resolve) => {
      const ws = new WebSocket(info.url, ['toolwire.v1'], { headers: { authorization: `Bearer ${HOST_TOKEN}`, host: `vm:${info.port}` } });
      ws.on('unexpected-response', (_req, res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve(text));
      });
      ws.on('error', () => {});
    });
    expect(body).toMatch(/^Host "vm:\d+" is not allowed here \(DNS-rebinding protection\): use a loopback name .* or list the name in allowedHosts\n$/);
  });

  it('serves loopback names: 127.0.0.1, localhost, *.localhost, [::1], with any port', async () => {
    const info = await startServer();
    for (const host of [`127.0.0.1:${info.port}`, `localhost:${info.port}`, 'LOCALHOST', `app.localhost:${info.port}`, '[::1]:1', '127.1.2.3']) {
      expect((await send(info, 'GET', '/healthz', { host })).status).toBe(200);
    }
    expect(await upgrade(info, `localhost:${info.port}`)).toBe(101);
  });

  it('serves the names listed in allowedHosts (or any with "*")', async () => {
    const listed = await startServer({ allowedHosts: ['Toolwire.Example'] });
    expect((await send(listed, 'GET', '/healthz', { host: `toolwire.example:${listed.port}` })).status).toBe(200);
    expect((await send(listed, 'GET', '/healthz', { host: 'other.example' })).status).toBe(403);
    expect(await upgrade(listed, 'toolwire.example')).toBe(101);
    const any = await startServer({ allowedHosts: ['*'] });
    expect((await send(any, 'GET', '/healthz', { host: 'whatever.example' })).status).toBe(200);
  });

  it('checks nothing on a non-loopback address unless allowedHosts is given; then loopback names and listed ones pass', () => {
    const open = new HostPolicy(undefined);
    open.listening('0.0.0.0');
    expect(open.refusal('evil.example')).toBeUndefined();
    open.listening('::ffff:127.0.0.1');
    expect(open.refusal('evil.example')).toMatch(/not allowed/);
    const listed = new HostPolicy(normalizeAllowedHosts(['toolwire.example', '::1']));
    listed.listening('10.0.0.5');
    expect(listed.refusal('toolwire.example:7700')).toBeUndefined();
    expect(listed.refusal('[::1]:7700')).toBeUndefined();
    expect(listed.refusal('localhost')).toBeUndefined();
    expect(listed.refusal('evil.example')).toMatch(/not allowed/);
    expect(listed.refusal('toolwire.example@evil.example')).toMatch(/not allowed/);
  });

  it('refuses a malformed allowedHosts option at once', () => {
    for (const allowedHosts of ['x', [''], ['host:80'], ['http://x'], ['a/b'], [7]]) {
      expect(() => resolveServerConfig({ allowedHosts } as unknown as ToolwireServerOptions)).toThrow(TypeError);
    }
    expect(normalizeAllowedHosts(['A.Example', '::1', '127.0.0.1', '*'])).toEqual(['a.example', '[::1]', '127.0.0.1', '*']);
  });
});
