/**
 * Issue 5 §1 — authentication: distinct roles, bare 401s, the failed-authentication limiter, token
 * rotation (removed or rotated tokens close their sessions), tokens from the environment.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AuthLimiter, addressKey } from '../src/auth/limiter.js';
import { TokenTable } from '../src/auth/tokens.js';
import type { RoutedCall } from '../src/seam.js';
import { ALPHA, BETA, CALLER, cleanups, drainCleanups, start } from './security.harness.js';
import { SLOW, closeCode, helloAndAdvertise, nextFrame, text, waitFor } from './endpoint.harness.js';

afterEach(drainCleanups);

/** Open an upgrade; resolves with the socket once open, or the refusal's status and headers. */
async function upgrade(url: string, headers: Record<string, string>): Promise<{ ws?: WebSocket; status?: number; response?: IncomingMessage }> {
  const ws = new WebSocket(url, { headers });
  ws.on('error', () => {});
  cleanups.push(() => {
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  });
  const result = await Promise.race([
    once(ws, 'open').then(() => ({ ws })),
    once(ws, 'unexpected-response').then(([, response]) => {
      (response as IncomingMessage).resume();
      return { status: (response as IncomingMessage).statusCode!, response: response as IncomingMessage };
    }),
  ]);
  return result;
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** POST an MCP initialize with `headers`; resolves with the response. */
function mcpInit(mcpUrl: string, headers: Record<string, string>): Promise<Response> {
  return fetch(mcpUrl, {
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

/** A connected raw host with the SLOW tool advertised. */
async function connectedHost(url: string, token: string): Promise<WebSocket> {
  const { ws } = await upgrade(url, bearer(token));
  await helloAndAdvertise(ws!, [SLOW]);
  return ws!;
}

function call(name: string): RoutedCall {
  return { id: 'c1', name, input: {}, workspace: '', agent: 'agent', signal: new AbortController().signal };
}

describe('roles', () => {
  it('a caller token cannot open a host connection: HTTP 401 with no detail', async () => {
    const s = await start();
    const refused = await upgrade(s.url, bearer(CALLER));
    expect(refused.status).toBe(401);
    expect(refused.response!.headers['content-length']).toBe('0');
    expect(refused.response!.headers['www-authenticate']).toBe('Bearer');
    expect(s.server.hostEndpoint.sessionCount).toBe(0);
  });

  it('a host token cannot use the MCP door: the same bare 401 as an unknown token', async () => {
    const s = await start();
    const asHost = await mcpInit(s.mcpUrl, bearer(ALPHA));
    const unknown = await mcpInit(s.mcpUrl, bearer('nobody-knows-this-token'));
    expect(asHost.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(await asHost.text()).toBe(await unknown.text());
    expect((await mcpInit(s.mcpUrl, bearer(CALLER))).status).toBe(200);
  });
});

describe('AuthLimiter', () => {
  it('groups IPv4-mapped addresses with IPv4 and IPv6 addresses by /64', () => {
    expect(addressKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(addressKey('10.1.2.3')).toBe('10.1.2.3');
    expect(addressKey('2001:db8:0:1:aaaa::1')).toBe(addressKey('2001:db8:0:1:bbbb:cccc:dddd:eeee'));
    expect(addressKey('2001:db8:0:1::1')).not.toBe(addressKey('2001:db8:0:2::1'));
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey(undefined)).toBe('unknown');
  });

  it('blocks an address after maxFailures within the window, doubling the block, and forgets it after the window', () => {
    let now = 1_000_000;
    const limiter = new AuthLimiter({ maxFailures: 3, windowMs: 10_000, blockMs: 100, maxTracked: 100, now: () => now });
    limiter.fail('10.0.0.1');
    limiter.fail('10.0.0.1');
    expect(limiter.check('10.0.0.1')).toEqual({ blocked: false });
    limiter.fail('10.0.0.1');
    expect(limiter.check('10.0.0.1')).toEqual({ blocked: true, retryAfterMs: 100 });
    expect(limiter.check('10.0.0.2')).toEqual({ blocked: false }); // other addresses unaffected
    now += 100;
    expect(limiter.check('10.0.0.1').blocked).toBe(false);
    limiter.fail('10.0.0.1'); // still over the limit within the window: the block doubles
    expect(limiter.check('10.0.0.1')).toEqual({ blocked: true, retryAfterMs: 200 });
    now += 20_000;
    expect(limiter.check('10.0.0.1').blocked).toBe(false);
    limiter.fail('10.0.0.1'); // a new window starts counting from one
    expect(limiter.check('10.0.0.1').blocked).toBe(false);
  });

  it('caps the block at the window and remembers at most maxTracked addresses', () => {
    let now = 0;
    const limiter = new AuthLimiter({ maxFailures: 1, windowMs: 1_000, blockMs: 100, maxTracked: 50, now: () => now });
    for (let i = 0; i < 20; i++) {
      limiter.fail('10.9.9.9');
      const verdict = limiter.check('10.9.9.9');
      expect(verdict.blocked && verdict.retryAfterMs).toBeLessThanOrEqual(1_000);
      now += verdict.blocked ? verdict.retryAfterMs : 0;
    }
    for (let i = 0; i < 10_000; i++) limiter.fail(`10.1.${i >> 8}.${i & 255}`);
    expect(limiter.size).toBe(50);
  });

  it('checkAndFail gives the verdict check gives before the failure and counts the failure as fail does', () => {
    let now = 0;
    const options = { maxFailures: 3, windowMs: 1_000, blockMs: 100, maxTracked: 3, now: () => now };
    const one = new AuthLimiter(options);
    const two = new AuthLimiter(options);
    const addresses = ['10.0.0.1', '10.0.0.1', '10.0.0.2', '10.0.0.1', '10.0.0.3', '10.0.0.4', '10.0.0.1', '10.0.0.2'];
    for (let i = 0; i < 400; i++) {
      const remote = addresses[i % addresses.length];
      const expected = one.check(remote);
      one.fail(remote);
      expect(two.checkAndFail(remote)).toEqual(expected);
      expect(two.size).toBe(one.size);
      expect(two.failures).toBe(one.failures);
      now += [0, 7, 30, 150, 1_200][i % 5]!;
    }
  });

  it('forgets the least recently failing address first, also after one address failed many times in a row', () => {
    const limiter = new AuthLimiter({ maxFailures: 1, windowMs: 60_000, blockMs: 60_000, maxTracked: 2, now: () => 0 });
    limiter.fail('10.0.0.1');
    for (let i = 0; i < 5; i++) limiter.fail('10.0.0.2');
    limiter.fail('10.0.0.1'); // now the most recent
    limiter.fail('10.0.0.3'); // over maxTracked: 10.0.0.2 goes
    expect(limiter.check('10.0.0.2').blocked).toBe(false);
    expect(limiter.check('10.0.0.1').blocked).toBe(true);
    expect(limiter.check('10.0.0.3').blocked).toBe(true);
  });

  it('refuses bad limits with a RangeError', () => {
    expect(() => new AuthLimiter({ maxFailures: 0, windowMs: 1, blockMs: 1, maxTracked: 1 })).toThrow(RangeError);
  });
});

describe('repeated failures from one address are slowed; valid tokens are not', () => {
  it('after authMaxFailures failed upgrades further failures get 429 with the reason and Retry-After, until the block passes', async () => {
    const s = await start({ authMaxFailures: 3, authBlockMs: 300, authFailureWindowMs: 60_000 });
    for (let i = 0; i < 3; i++) expect((await upgrade(s.url, bearer(`wrong-${i}`))).status).toBe(401);
    const blocked = await upgrade(s.url, bearer('wrong-3'));
    expect(blocked.status).toBe(429);
    expect(blocked.response!.headers['retry-after']).toBe('1');
    expect(blocked.response!.headers['content-type']).toBe('text/plain; charset=utf-8');
    const body = await new Promise<string>((resolve) => {
      let text = '';
      blocked.response!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      blocked.response!.on('end', () => resolve(text));
    });
    expect(body).toBe('too many failed authentications from this address; retry after 1 s\n');
    // The MCP door shares the limiter: a failed request from the same address is throttled there too.
    const mcp = await mcpInit(s.mcpUrl, bearer('wrong-mcp'));
    expect(mcp.status).toBe(429);
    expect(mcp.headers.get('retry-after')).toBe('1');
    expect(((await mcp.json()) as { error: { message: string } }).error.message).toBe('too many failed authentications from this address; retry after 1 s');
    // Failures while throttled count too (each doubles the block, up to the window); once the
    // block passes, a failure is a plain 401 again.
    await waitFor(() => !s.server.limiter.check('127.0.0.1').blocked, 'the block to pass', 10_000);
    const passed = await upgrade(s.url, bearer('wrong-later'));
    expect(passed.status).toBe(401);
  });

  it('a valid host or caller token is accepted while its address is throttled for failed ones', async () => {
    const s = await start({ authMaxFailures: 3, authBlockMs: 60_000, authFailureWindowMs: 60_000 });
    for (let i = 0; i < 20; i++) expect([401, 429]).toContain((await upgrade(s.url, bearer(`wrong-${i}`))).status);
    expect((await upgrade(s.url, bearer('wrong-again'))).status).toBe(429);
    const host = await upgrade(s.url, bearer(ALPHA));
    expect(host.ws!.readyState).toBe(WebSocket.OPEN);
    expect((await mcpInit(s.mcpUrl, bearer(CALLER))).status).toBe(200);
    // Still throttled for failures afterwards: a success does not clear the count.
    expect((await mcpInit(s.mcpUrl, bearer('wrong-mcp'))).status).toBe(429);
  });

  it('counts failed MCP requests too', async () => {
    const s = await start({ authMaxFailures: 2, authBlockMs: 60_000 });
    expect((await mcpInit(s.mcpUrl, bearer(ALPHA))).status).toBe(401); // wrong role counts
    expect((await mcpInit(s.mcpUrl, {})).status).toBe(401);
    const blocked = await mcpInit(s.mcpUrl, bearer('nobody-knows-this-token'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect((await upgrade(s.url, bearer('wrong'))).status).toBe(429);
    expect((await mcpInit(s.mcpUrl, bearer(CALLER))).status).toBe(200);
  });

  it('logs a failed authentication at warn with the remote address, never the token', async () => {
    const logs: { level: number; msg: string; remote?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => logs.push(JSON.parse(line) as (typeof logs)[number]) });
    const s = await start({ authMaxFailures: 2, authBlockMs: 60_000, logger });
    const secret = 'wrong-secret-token-value';
    await upgrade(s.url, bearer(secret));
    await mcpInit(s.mcpUrl, bearer(secret));
    await upgrade(s.url, bearer(secret)); // throttled now: 429
    const lines = await waitFor(() => {
      const refused = logs.filter((l) => /refused: not authenticated/.test(l.msg));
      return refused.length >= 3 ? refused : undefined;
    }, 'three warn lines');
    for (const line of lines) {
      expect(line.level).toBe(40); // pino's warn
      expect(line.remote).toMatch(/127\.0\.0\.1/);
    }
    expect(lines.map((l) => l.msg)).toEqual([
      'host upgrade refused: not authenticated',
      'MCP request refused: not authenticated',
      'host upgrade refused: not authenticated; too many failed authentications from this address',
    ]);
    expect(JSON.stringify(logs)).not.toContain(secret);
  });
});

describe('token rotation (updateCredentials, as a config reload does)', () => {
  it('closes a removed host token’s session 1008 and settles its pending call 69; other hosts are kept', async () => {
    const s = await start();
    const alpha = await connectedHost(s.url, ALPHA);
    const beta = await connectedHost(s.url, BETA);
    const frame = nextFrame(alpha, 'call');
    const pending = s.server.router.route(call('alpha__slow'));
    await frame;
    const closed = closeCode(alpha);
    const changes = await s.server.updateCredentials([{ name: 'beta', token: BETA }], [{ name: 'agent', token: CALLER }]);
    expect(changes).toEqual({ closedHosts: 1, closedCallers: 0 });
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(69);
    expect(text(capture.stderr)).toBe('toolwire: host alpha token was revoked (close 1008 POLICY_VIOLATION)\n');
    expect(await closed).toBe(1008);
    expect(beta.readyState).toBe(WebSocket.OPEN);
    await waitFor(() => s.server.router.tools().every((t) => !t.name.startsWith('alpha__')), 'alpha tools to leave');
    expect(s.server.router.tools().map((t) => t.name)).toEqual(['beta__slow']);
    // The removed token no longer authenticates.
    expect((await upgrade(s.url, bearer(ALPHA))).status).toBe(401);
  });

  it('a rotated token closes the session of the old token; the new token connects; unchanged tokens keep theirs', async () => {
    const s = await start();
    const alpha = await connectedHost(s.url, ALPHA);
    const beta = await connectedHost(s.url, BETA);
    const closed = closeCode(alpha);
    const rotated = 'alpha-token-rotated-000000000';
    await s.server.updateCredentials(
      [
        { name: 'alpha', token: rotated },
        { name: 'beta', token: BETA },
      ],
      [{ name: 'agent', token: CALLER }],
    );
    expect(await closed).toBe(1008);
    expect(beta.readyState).toBe(WebSocket.OPEN);
    const again = await connectedHost(s.url, rotated);
    expect(again.readyState).toBe(WebSocket.OPEN);
    expect(
      s.server.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['alpha__slow', 'beta__slow']);
  });

  it('an invalid update changes nothing and closes nothing', async () => {
    const s = await start();
    const alpha = await connectedHost(s.url, ALPHA);
    await expect(s.server.updateCredentials([{ name: 'a__b', token: 'x' }], [])).rejects.toThrow(TypeError);
    expect(alpha.readyState).toBe(WebSocket.OPEN);
    expect(s.server.tokens.authenticate(`Bearer ${ALPHA}`, 'host')?.name).toBe('alpha');
  });

  it('a removed caller token closes its MCP sessions and is refused from then on', async () => {
    const s = await start();
    const init = await mcpInit(s.mcpUrl, bearer(CALLER));
    expect(init.status).toBe(200);
    await init.text();
    expect(s.server.mcp.sessionCount).toBe(1);
    const changes = await s.server.updateCredentials([{ name: 'alpha', token: ALPHA }], [{ name: 'agent', token: 'agent-token-new-0000000000' }]);
    expect(changes.closedCallers).toBe(1);
    expect(s.server.mcp.sessionCount).toBe(0);
    expect((await mcpInit(s.mcpUrl, bearer(CALLER))).status).toBe(401);
    expect((await mcpInit(s.mcpUrl, bearer('agent-token-new-0000000000'))).status).toBe(200);
  });

  it('keeps the principal of an unchanged credential current across update()', () => {
    const table = new TokenTable([{ name: 'alpha', token: ALPHA }], [{ name: 'agent', token: CALLER, grant: ['x'] }]);
    const host = table.authenticate(`Bearer ${ALPHA}`, 'host')!;
    const caller = table.authenticate(`Bearer ${CALLER}`, 'caller')!;
    table.update([{ name: 'alpha', token: ALPHA }], [{ name: 'agent', token: CALLER, grant: ['x', 'y'] }]);
    expect(table.isCurrent(host)).toBe(true);
    expect(table.isCurrent(caller)).toBe(false); // its grant changed: the old principal is stale
  });
});
