/**
 * The status endpoints over HTTP (issue 16, item 5), without a browser: who is refused, how a
 * login is held (cookie flags, no token in it), CSRF refusals, the snapshot's facts, the stop (130,
 * and `cancel` sent to the host), grants, revocation, the feed's bounds. A @toolwire/testing server
 * and a rogue tool host (no client library) that never answers, so calls stay in flight.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, generateToken, startRogueHost, startServer } from '@toolwire/testing';
import { waitFor } from './helpers.js';

afterEach(closeAll);

const CALLER_TOKEN = generateToken();
const VIEWER_TOKEN = generateToken();
const object = { type: 'object' };

async function setup(options: Parameters<typeof startServer>[0] = {}) {
  // Callers `agent` and `viewer` of this file (the kit's own generated caller, `rig`, is unused).
  const started = await startServer({
    caller: 'rig',
    callers: [
      { name: 'agent', token: CALLER_TOKEN },
      { name: 'viewer', token: VIEWER_TOKEN, grant: ['alpha__quick'] },
    ],
    cancelGraceMs: 300,
    ...options,
  });
  const host = await startRogueHost(started, {
    name: 'alpha',
    tools: [
      { name: 'slow', description: 'never answers\nsecond line', inputSchema: object },
      { name: 'quick', inputSchema: object },
    ],
  });
  const base = started.url.replace(/^ws/, 'http');
  return { ...started, host, base, origin: base };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read the snapshot's JSON fields directly
type Json = any;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function login(base: string, token: string, headers: Record<string, string> = { origin: base }): Promise<Response> {
  return fetch(`${base}/status/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
}

/** The session cookie (`name=value`) a successful login sets. */
async function session(base: string, token = CALLER_TOKEN): Promise<string> {
  const res = await login(base, token);
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie')!.split(';', 1)[0]!;
}

describe('/status access', () => {
  it('refuses every unauthenticated request: the login form (401) for the page, 401 for the data, and nothing of the picture', async () => {
    const { base } = await setup();
    const page = await fetch(`${base}/status`);
    expect(page.status).toBe(401);
    const html = await page.text();
    expect(html).toContain('name="token"');
    expect(html).not.toContain('alpha');
    for (const path of ['/status/snapshot', '/status/events']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.text()).not.toContain('alpha');
    }
    expect((await fetch(`${base}/status/snapshot`, { headers: bearer('wrong-token') })).status).toBe(401);
    expect((await fetch(`${base}/status/snapshot`, { headers: { cookie: 'toolwire_status=forged' } })).status).toBe(401);
    const stop = await fetch(`${base}/status/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":"x"}' });
    expect(stop.status).toBe(401);
  });

  it('logs a browser in with a session cookie: HttpOnly, SameSite=Strict, Path=/status, not the token; security headers on the page', async () => {
    const { base } = await setup();
    const res = await login(base, CALLER_TOKEN);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/status');
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^toolwire_status=[A-Za-z0-9_-]{43}; Path=\/status; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(cookie).not.toContain(CALLER_TOKEN);
    const page = await fetch(`${base}/status`, { headers: { cookie: cookie.split(';', 1)[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Signed in as <strong>agent</strong>');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
  });

  it('refuses a login, logout or stop sent from another origin (CSRF), and a wrong token with the form again', async () => {
    const { base } = await setup();
    const foreign = await login(base, CALLER_TOKEN, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('set-cookie')).toBeNull();
    const crossSite = await login(base, CALLER_TOKEN, { origin: base, 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    const wrong = await login(base, 'not-a-caller-token');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('role="alert"');

    const cookie = await session(base);
    const stop = (headers: Record<string, string>) =>
      fetch(`${base}/status/stop`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: '{"id":"x","agent":"agent"}' });
    expect((await stop({})).status).toBe(403); // a browser always sends Origin on a POST: none means not the page
    expect((await stop({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await stop({ origin: base, 'content-type': 'text/plain' })).status).toBe(415);
    expect((await stop({ origin: base })).status).toBe(404);
    const logout = await fetch(`${base}/status/logout`, { method: 'POST', headers: { cookie, origin: 'http://evil.example' }, redirect: 'manual' });
    expect(logout.status).toBe(403);
    expect((await fetch(`${base}/status/snapshot`, { headers: { cookie } })).status).toBe(200);
    const out = await fetch(`${base}/status/logout`, { method: 'POST', headers: { cookie, origin: base }, redirect: 'manual' });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await fetch(`${base}/status/snapshot`, { headers: { cookie } })).status).toBe(401);
  });

  it('throttles failed logins like any failed authentication (429 with Retry-After)', async () => {
    const { base } = await setup({ authMaxFailures: 2 });
    expect((await login(base, 'bad-1')).status).toBe(401);
    expect((await login(base, 'bad-2')).status).toBe(401);
    const third = await login(base, 'bad-3');
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await login(base, CALLER_TOKEN)).status).toBe(303); // a valid token is still accepted
  });

  it('ends a browser session once its caller token is revoked', async () => {
    const started = await setup();
    const { server, base } = started;
    const cookie = await session(base);
    expect((await fetch(`${base}/status/snapshot`, { headers: { cookie } })).status).toBe(200);
    await server.updateCredentials([{ name: 'alpha', token: await started.hostToken('alpha') }], [{ name: 'agent', token: generateToken() }]);
    expect((await fetch(`${base}/status/snapshot`, { headers: { cookie } })).status).toBe(401);
  });
});

describe('/status data', () => {
  it('shows the host (address, protocol, tools) and a call in flight, then the finished call with its exit code', async () => {
    const { server, base, host } = await setup();
    const call = server.executor.execute({ id: 'call-1', name: 'alpha__slow', input: {}, agent: 'agent' });
    const frame = await host.next('call');
    const snapshot: Json = await (await fetch(`${base}/status/snapshot`, { headers: bearer(CALLER_TOKEN) })).json();
    expect(snapshot.you).toEqual({ caller: 'agent', grant: ['*'] });
    expect(snapshot.hosts).toHaveLength(1);
    expect(snapshot.hosts[0]).toMatchObject({ name: 'alpha', remote: '127.0.0.1', protocol: 1, inFlight: 1 });
    expect(snapshot.hosts[0].tools).toEqual([
      { name: 'alpha__slow', tool: 'slow', description: 'never answers' },
      { name: 'alpha__quick', tool: 'quick' },
    ]);
    expect(snapshot.callsInFlight).toBe(1);
    expect(snapshot.calls).toEqual([{ id: 'call-1', agent: 'agent', tool: 'alpha__slow', host: 'alpha', startedAt: expect.any(Number), bytes: 0 }]);
    host.send({ type: 'result', id: frame.id, stdout: 'hi', stderr: '', exitCode: 3 });
    await expect(call).resolves.toMatchObject({ capture: { exitCode: 3 } });
    const after = server.status();
    expect(after.calls).toEqual([]);
    expect(after.recent).toEqual([
      { id: 'call-1', agent: 'agent', tool: 'alpha__slow', host: 'alpha', startedAt: expect.any(Number), endedAt: expect.any(Number), exitCode: 3, bytes: 2 },
    ]);
  });

  it('keeps the last statusRecentCalls finished calls, newest first, failures with their kind', async () => {
    const { server } = await setup({ statusRecentCalls: 3 });
    for (let i = 0; i < 5; i++) await server.executor.execute({ id: `missing-${i}`, name: 'nope', input: {}, agent: 'agent' });
    const recent = server.status().recent;
    expect(recent.map((c) => c.id)).toEqual(['missing-4', 'missing-3', 'missing-2']);
    expect(recent[0]).toMatchObject({ exitCode: 127, failure: 'not_found' });
  });

  it('stops a call in flight as the caller would: cancel sent to the host, the call ends 130; only with a grant that allows the tool', async () => {
    const { server, base, host } = await setup();
    const call = server.executor.execute({ id: 'call-2', name: 'alpha__slow', input: {}, agent: 'agent' });
    const frame = await host.next('call');
    const stop = (token: string, body: unknown) =>
      fetch(`${base}/status/stop`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const refused = await stop(VIEWER_TOKEN, { id: 'call-2', agent: 'agent' });
    expect(refused.status).toBe(403);
    expect((await stop(CALLER_TOKEN, { id: 'other', agent: 'agent' })).status).toBe(404);
    expect((await stop(CALLER_TOKEN, { agent: 'agent' })).status).toBe(400);
    const cancel = host.next('cancel');
    const ok = await stop(CALLER_TOKEN, { id: 'call-2', agent: 'agent' });
    expect(ok.status).toBe(202);
    await expect(cancel).resolves.toEqual({ type: 'cancel', id: frame.id, reason: 'stop' });
    const result = await call;
    expect(result).toMatchObject({ capture: { exitCode: 130, failure: 'cancelled' } });
    expect(server.status().recent[0]).toMatchObject({ id: 'call-2', exitCode: 130 });
  });
});

describe('/status/events', () => {
  /** Read SSE events from `res` until `done` says stop; returns them. */
  async function readEvents(res: Response, done: (events: { event: string; data: Json }[]) => boolean) {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const events: { event: string; data: Json }[] = [];
    let buffer = '';
    while (!done(events)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event !== undefined && data !== undefined) events.push({ event, data: JSON.parse(data) });
      }
    }
    return { events, reader };
  }

  it('streams who you are, the snapshot, and a new snapshot when a call starts; at most statusMaxViewers feeds', async () => {
    const { server, base } = await setup({ statusMaxViewers: 1 });
    const controller = new AbortController();
    const res = await fetch(`${base}/status/events`, { headers: bearer(CALLER_TOKEN), signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const first = await readEvents(res, (e) => e.length >= 2);
    expect(first.events[0]).toEqual({ event: 'you', data: { caller: 'agent', grant: ['*'] } });
    expect(first.events[1]!.event).toBe('snapshot');
    expect(first.events[1]!.data.hosts[0].name).toBe('alpha');

    const second = await fetch(`${base}/status/events`, { headers: bearer(CALLER_TOKEN) });
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('5');

    void server.executor.execute({ id: 'call-3', name: 'alpha__slow', input: {}, agent: 'agent' });
    const reader = first.reader;
    const decoder = new TextDecoder();
    let text = '';
    await waitFor(async () => {
      const { value } = await reader.read();
      text += decoder.decode(value, { stream: true });
      return text.includes('"id":"call-3"');
    }, 'a snapshot with call-3');
    controller.abort();
  });

  it('is ended by server.close() (no stream or timer left)', async () => {
    const { server, base } = await setup();
    const res = await fetch(`${base}/status/events`, { headers: bearer(CALLER_TOKEN) });
    const reader = res.body!.getReader();
    await reader.read();
    await server.close();
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true }));
      if (chunk.done) break;
    }
  });
});
