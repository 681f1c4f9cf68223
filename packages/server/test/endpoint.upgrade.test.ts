/** The endpoint: authentication at the upgrade, welcome, loopback dev mode, and close(). */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  ALPHA_TOKEN,
  CALLER_TOKEN,
  SLOW,
  closeCode,
  helloAndAdvertise,
  hostWithCall,
  rawHost,
  routedCall,
  startEndpoint,
  teardown,
  text,
  waitFor,
} from './endpoint.harness.js';

afterEach(teardown);

/** Try an upgrade and resolve with the HTTP status of the refusal. */
async function refusedStatus(url: string, headers: Record<string, string>): Promise<{ status: number; response: IncomingMessage }> {
  const ws = new WebSocket(url, { headers });
  ws.on('error', () => {});
  const [, response] = (await once(ws, 'unexpected-response')) as [unknown, IncomingMessage];
  response.resume();
  ws.terminate();
  return { status: response.statusCode!, response };
}

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('authentication at the upgrade', () => {
  it.each([
    ['no Authorization header', {}],
    ['an unknown token', { authorization: 'Bearer wrong' }],
    ['a caller token (wrong role)', { authorization: `Bearer ${CALLER_TOKEN}` }],
    ['a malformed header', { authorization: ALPHA_TOKEN }],
  ])('refuses %s with HTTP 401 and no detail', async (_label, headers) => {
    const h = await startEndpoint();
    const { status, response } = await refusedStatus(h.url, headers);
    expect(status).toBe(401);
    expect(response.headers['content-length']).toBe('0');
    expect(response.headers['www-authenticate']).toBe('Bearer');
    expect(h.endpoint.sessionCount).toBe(0);
  });

  it('binds a host token to its identity and answers hello with welcome', async () => {
    const h = await startEndpoint({ heartbeatMs: 5_000, maxPayload: 1 << 20, maxInFlightPerHost: 7, maxToolsPerHost: 9 });
    const ws = new WebSocket(h.url, 'toolwire.v1', { headers: { authorization: `Bearer ${ALPHA_TOKEN}` } });
    ws.on('error', () => {});
    await once(ws, 'open');
    expect(ws.protocol).toBe('toolwire.v1');
    // A host never names itself with a token: hello.name is ignored.
    const { welcome, advertised } = await helloAndAdvertise(ws, [SLOW], { name: 'beta' });
    expect(welcome).toEqual({
      type: 'welcome',
      protocol: 1,
      host: 'alpha',
      heartbeatMs: 5_000,
      limits: { maxPayload: 1 << 20, maxInFlight: 7, maxTools: 9 },
    });
    expect(advertised).toEqual({ type: 'advertised', accepted: [{ name: 'slow', as: 'alpha__slow' }], rejected: [] });
    expect(h.router.hosts()).toMatchObject([{ name: 'alpha', tools: ['alpha__slow'], inFlight: 0 }]);
    expect(h.router.hosts()[0]!.connectedAt).toBeInstanceOf(Date);
    ws.terminate();
  });
});

describe('protocol versions (DESIGN §5)', () => {
  it('picks the newest subprotocol both speak: a host offering v2 and v1 gets v2 and a v2 welcome', async () => {
    const h = await startEndpoint();
    const ws = new WebSocket(h.url, ['toolwire.v2', 'toolwire.v1'], { headers: { authorization: `Bearer ${ALPHA_TOKEN}` } });
    ws.on('error', () => {});
    await once(ws, 'open');
    expect(ws.protocol).toBe('toolwire.v2');
    const { welcome } = await helloAndAdvertise(ws, [SLOW], { protocol: 2 });
    expect(welcome).toMatchObject({ type: 'welcome', protocol: 2, host: 'alpha' });
    ws.terminate();
  });

  it('an older host offering only v1 is served at v1', async () => {
    const h = await startEndpoint();
    const ws = new WebSocket(h.url, 'toolwire.v1', { headers: { authorization: `Bearer ${ALPHA_TOKEN}` } });
    ws.on('error', () => {});
    await once(ws, 'open');
    expect(ws.protocol).toBe('toolwire.v1');
    const { welcome, advertised } = await helloAndAdvertise(ws, [SLOW]);
    expect(welcome).toMatchObject({ protocol: 1 });
    expect(welcome).not.toHaveProperty('output');
    expect(advertised.accepted).toHaveLength(1);
    ws.terminate();
  });

  it('a hello whose version is not the negotiated one closes 1002, naming both', async () => {
    const h = await startEndpoint();
    const ws = new WebSocket(h.url, ['toolwire.v2'], { headers: { authorization: `Bearer ${ALPHA_TOKEN}` } });
    ws.on('error', () => {});
    await once(ws, 'open');
    const closed = new Promise<[number, string]>((resolve) => ws.once('close', (code, reason) => resolve([code, reason.toString()])));
    ws.send(JSON.stringify({ type: 'hello', protocol: 1 }));
    const [code, reason] = await closed;
    expect(code).toBe(1002);
    expect(reason).toMatch(/hello\.protocol 1 is not the version this connection negotiated \(2/);
  });

  it('names no subprotocol for an upgrade that offers none of ours, so a WebSocket client fails the handshake', async () => {
    const h = await startEndpoint();
    const ws = new WebSocket(h.url, ['toolwire.v9'], { headers: { authorization: `Bearer ${ALPHA_TOKEN}` } });
    const [error] = (await once(ws, 'error')) as [Error];
    expect(error.message).toMatch(/no subprotocol/);
    ws.terminate();
  });
});

describe('loopback dev mode', () => {
  it('refuses a tokenless upgrade with 401 when dev mode is off', async () => {
    const h = await startEndpoint();
    expect((await refusedStatus(h.url, {})).status).toBe(401);
  });

  it('lets a tokenless loopback host name itself in hello.name (default "local")', async () => {
    const h = await startEndpoint({ loopbackDev: true });
    const named = await rawHost(h.url, null);
    expect((await helloAndAdvertise(named, [SLOW], { name: 'laptop' })).welcome.host).toBe('laptop');
    const unnamed = await rawHost(h.url, null);
    expect((await helloAndAdvertise(unnamed, [SLOW])).welcome.host).toBe('local');
    expect(
      h.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['laptop__slow', 'local__slow']);
  });

  it('still refuses a wrong token in dev mode', async () => {
    const h = await startEndpoint({ loopbackDev: true });
    expect((await refusedStatus(h.url, { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  it.each([
    ['a configured host identity', 'alpha'],
    ['a name with "__"', 'a__b'],
    ['a name with bad characters', 'my host'],
  ])('closes 1008 when a tokenless host claims %s', async (_label, name) => {
    const h = await startEndpoint({ loopbackDev: true });
    const ws = await rawHost(h.url, null);
    const closed = closeCode(ws);
    ws.send(JSON.stringify({ type: 'hello', protocol: 1, name }));
    expect(await closed).toBe(1008);
    expect(h.router.hosts()).toEqual([]);
  });
});

describe('HostEndpoint.close', () => {
  it('closes every session 1001, settles pending calls 69, and leaves no timer running', async () => {
    const baseline = timers();
    const h = await startEndpoint({ heartbeatMs: 50, helloTimeoutMs: 60_000 });
    const { ws, pending } = await hostWithCall(h, { deadlineMs: 60_000 });
    const idle = await rawHost(h.url); // never says hello: its hello timer must be cleared too
    const closes = [closeCode(ws), closeCode(idle)];
    expect(timers()).toBeGreaterThan(baseline); // heartbeats, hello timer, deadline
    await h.endpoint.close();
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture.stderr)).toBe('toolwire: server shutting down (close 1001 GOING_AWAY)\n');
    expect(await Promise.all(closes)).toEqual([1001, 1001]);
    expect(h.endpoint.sessionCount).toBe(0);
    expect(h.router.tools()).toEqual([]);
    await waitFor(() => timers() <= baseline, 'every timer to be cleared');
    // Closed: further upgrades are refused and close() is idempotent.
    expect((await refusedStatus(h.url, { authorization: `Bearer ${ALPHA_TOKEN}` })).status).toBe(503);
    await h.endpoint.close();
  });

  it('terminates a peer that does not complete the close handshake, bounded by cancelGraceMs', async () => {
    const h = await startEndpoint({ cancelGraceMs: 100 });
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const began = Date.now();
    await h.endpoint.close();
    expect(Date.now() - began).toBeLessThan(1_500);
    expect(h.endpoint.sessionCount).toBe(0);
  });

  it('a route after close settles 69 (host not connected) and never hangs', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    await h.endpoint.close();
    expect(h.router.tools()).toEqual([]);
    expect((await h.router.route(routedCall('alpha__slow').call))?.exitCode).toBe(69);
  });
});
