/**
 * DESIGN §6 through real sockets: each fault settles every affected call exactly once, promptly,
 * as a capture with a distinct exit code and the reason on stderr.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { HOST_TOKEN, alive, cleanup, nextFrame, rawAdvertise, rawHost, startFixtureHost, startServer, tempDir, text, waitFor, type Started } from './helpers.js';

afterEach(cleanup);

const SLOW = { name: 'slow', description: 'answers only when told', inputSchema: { type: 'object' } };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read each outcome's own fields (capture, reason) directly
function call(started: Started, name: string, extra: Record<string, unknown> = {}): Promise<any> {
  return started.server.executor.execute({ name, input: {}, agent: 'agent', ...extra });
}

async function rawWithCall(started: Started, extra: Record<string, unknown> = {}) {
  const ws = await rawHost(started.url);
  await rawAdvertise(ws, [SLOW]);
  const frame = nextFrame(ws, 'call');
  const pending = call(started, 'alpha__slow', extra);
  const sent = await frame;
  return { ws, pending, id: sent.id as string, sent };
}

const closeOf = (ws: WebSocket) => once(ws, 'close').then(([code]) => code as number);

describe('host socket closes', () => {
  it('a host process killed mid-call settles its calls 69 at once and its tools leave tools()', async () => {
    const started = await startServer();
    const host = await startFixtureHost(started);
    const pending = call(started, 'alpha__wait');
    await waitFor(() => started.server.router.hosts().some((h) => h.inFlight === 1), 'call in flight');
    const killedAt = Date.now();
    process.kill(host.pid!, 'SIGKILL');
    const result = await pending;
    expect(result.capture.exitCode).toBe(69);
    expect(result.capture.failure).toBe('unavailable');
    expect(text(result.capture.stderr)).toMatch(/toolwire: .*\n$/);
    expect(Date.now() - killedAt).toBeLessThan(1_000);
    await waitFor(() => started.server.router.tools().length === 0, 'tools to leave');
    // Until the host comes back, its tools answer 69 (retry later), not 127 (no such tool).
    const again = await call(started, 'alpha__echo');
    expect(again.capture.exitCode).toBe(69);
    expect(text(again.capture.stderr)).toMatch(/toolwire: host alpha is not connected/);
    expect((await call(started, 'alpha__never_advertised')).capture.exitCode).toBe(127);
  });
});

describe('host goes silent (half-open)', () => {
  it('a stopped host process is terminated by the heartbeat and its calls settle 69 within 2 intervals', async () => {
    const started = await startServer({ heartbeatMs: 200 });
    const host = await startFixtureHost(started);
    const pending = call(started, 'alpha__wait');
    await waitFor(() => started.server.router.hosts().some((h) => h.inFlight === 1), 'call in flight');
    const stoppedAt = Date.now();
    process.kill(host.pid!, 'SIGSTOP');
    const result = await pending;
    expect(result.capture.exitCode).toBe(69);
    expect(Date.now() - stoppedAt).toBeLessThan(2 * 200 + 300);
    process.kill(host.pid!, 'SIGCONT');
  });
});

describe('bad frames', () => {
  it('an unparsable frame closes 1002 and settles pending calls 76', async () => {
    const started = await startServer();
    const { ws, pending } = await rawWithCall(started);
    const closed = closeOf(ws);
    ws.send('this is not json');
    expect(await closed).toBe(1002);
    const result = await pending;
    expect(result.capture.exitCode).toBe(76);
    expect(result.capture.failure).toBe('protocol');
  });

  it('invalid UTF-8 in a text frame closes 1007 and settles pending calls 76', async () => {
    const started = await startServer();
    const { ws, pending } = await rawWithCall(started);
    const closed = closeOf(ws);
    ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    expect(await closed).toBe(1007);
    expect((await pending).capture.exitCode).toBe(76);
  });

  it('a binary frame closes 1003 and settles pending calls 76', async () => {
    const started = await startServer();
    const { ws, pending } = await rawWithCall(started);
    const closed = closeOf(ws);
    ws.send(Buffer.from('{"type":"result"}'), { binary: true });
    expect(await closed).toBe(1003);
    expect((await pending).capture.exitCode).toBe(76);
  });

  it('a frame over maxPayload closes 1009 and settles pending calls 76', async () => {
    const started = await startServer({ maxPayload: 4096 });
    const { ws, pending, id } = await rawWithCall(started);
    const closed = closeOf(ws);
    ws.send(JSON.stringify({ type: 'result', id, stdout: 'x'.repeat(10_000), stderr: '', exitCode: 0 }));
    expect(await closed).toBe(1009);
    expect((await pending).capture.exitCode).toBe(76);
  });

  it('a wrong-shape frame naming a known call settles that call 76 and keeps the session', async () => {
    const started = await startServer();
    const { ws, pending, id } = await rawWithCall(started);
    ws.send(JSON.stringify({ type: 'result', id, stdout: 42 }));
    const result = await pending;
    expect(result.capture.exitCode).toBe(76);
    expect(text(result.capture.stderr)).toMatch(/toolwire: .*stdout/);
    // The session is kept: the next call still works.
    const next = nextFrame(ws, 'call');
    const second = call(started, 'alpha__slow');
    const frame = await next;
    ws.send(JSON.stringify({ type: 'result', id: frame.id, stdout: 'ok', stderr: '', exitCode: 0 }));
    expect(text((await second).capture.stdout)).toBe('ok');
  });

  it('a result for an unknown id is dropped and the session kept', async () => {
    const started = await startServer();
    const { ws, pending, id } = await rawWithCall(started);
    ws.send(JSON.stringify({ type: 'result', id: 'no-such-call', stdout: 'x', stderr: '', exitCode: 0 }));
    ws.send(JSON.stringify({ type: 'result', id: '0', stdout: 'x', stderr: '', exitCode: 0 }));
    ws.send(JSON.stringify({ type: 'result', id, stdout: 'mine', stderr: '', exitCode: 0 }));
    const result = await pending;
    expect(result.capture.exitCode).toBe(0);
    expect(text(result.capture.stdout)).toBe('mine');
    expect(ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('deadline', () => {
  it('settles 124 at the deadline, sends cancel, and drops the late result', async () => {
    const started = await startServer();
    const begun = Date.now();
    const { ws, pending, id, sent } = await rawWithCall(started, { deadlineMs: 300 });
    expect(sent.deadlineMs).toBeLessThanOrEqual(300);
    const cancel = nextFrame(ws, 'cancel');
    const result = await pending;
    expect(result.capture.exitCode).toBe(124);
    expect(text(result.capture.stderr)).toMatch(/toolwire: .*300 ms/);
    expect(Date.now() - begun).toBeGreaterThanOrEqual(290);
    expect(await cancel).toEqual({ type: 'cancel', id, reason: 'deadline' });
    ws.send(JSON.stringify({ type: 'result', id, stdout: 'late', stderr: '', exitCode: 0 }));
    // Still a healthy session afterwards.
    const next = nextFrame(ws, 'call');
    const second = call(started, 'alpha__slow');
    const frame = await next;
    ws.send(JSON.stringify({ type: 'result', id: frame.id, stdout: 'ok', stderr: '', exitCode: 0 }));
    expect((await second).capture.exitCode).toBe(0);
  });
});

describe('stop', () => {
  it('sends cancel and settles 130 with the partial output the host returns', async () => {
    const started = await startServer();
    const { ws, pending, id } = await rawWithCall(started);
    const cancel = nextFrame(ws, 'cancel');
    started.server.executor.stop('agent');
    expect(await cancel).toEqual({ type: 'cancel', id, reason: 'stop' });
    ws.send(JSON.stringify({ type: 'result', id, stdout: 'half', stderr: '', exitCode: 143 }));
    const result = await pending;
    expect(result.capture.exitCode).toBe(130);
    expect(text(result.capture.stdout)).toBe('half');
    expect(text(result.capture.stderr)).toMatch(/toolwire: .*stop/);
  });

  it('settles 130 within the cancel grace when the host never answers', async () => {
    const started = await startServer({ cancelGraceMs: 200 });
    const { pending } = await rawWithCall(started);
    const stoppedAt = Date.now();
    started.server.executor.stop();
    const result = await pending;
    expect(result.capture.exitCode).toBe(130);
    expect(Date.now() - stoppedAt).toBeLessThan(200 + 300);
  });

  it('kills the tool process tree on the host, grandchildren included', async () => {
    const started = await startServer();
    const piddir = await tempDir();
    await startFixtureHost(started, { env: { PIDDIR: piddir } });
    const pending = call(started, 'alpha__tree');
    const pids = await waitFor(async () => {
      const lines = (await readFile(join(piddir, 'pids'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
      return lines.length === 2 ? lines.map(Number) : undefined;
    }, 'the tool to record its pids');
    expect(pids.every(alive)).toBe(true);
    started.server.executor.stop();
    const result = await pending;
    expect(result.capture.exitCode).toBe(130);
    expect(text(result.capture.stdout)).toContain('started');
    await waitFor(() => pids.every((pid) => !alive(pid)), 'the tool process tree to be gone', 3_000);
  });
});

describe('same host connects again', () => {
  it('closes the old session 4000, settles its calls 69, never replays, and keeps the new session', async () => {
    const started = await startServer();
    const { ws: old, pending } = await rawWithCall(started);
    const oldClosed = closeOf(old);
    const fresh = await rawHost(started.url);
    let replayed = false;
    fresh.on('message', (d: Buffer) => {
      if (JSON.parse(d.toString()).type === 'call') replayed = true;
    });
    await rawAdvertise(fresh, [SLOW]);
    expect(await oldClosed).toBe(4000);
    const result = await pending;
    expect(result.capture.exitCode).toBe(69);
    expect(replayed).toBe(false);
    expect(started.server.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
    // The new session answers calls.
    const next = nextFrame(fresh, 'call');
    const second = call(started, 'alpha__slow');
    const frame = await next;
    fresh.send(JSON.stringify({ type: 'result', id: frame.id, stdout: 'new', stderr: '', exitCode: 0 }));
    expect(text((await second).capture.stdout)).toBe('new');
  });
});

describe('overload', () => {
  it('a host at its in-flight limit gets new calls settled 75 at once', async () => {
    const started = await startServer({ maxInFlightPerHost: 1 });
    const { ws, pending, id } = await rawWithCall(started);
    const over = await call(started, 'alpha__slow');
    expect(over.capture.exitCode).toBe(75);
    expect(over.capture.failure).toBe('overloaded');
    ws.send(JSON.stringify({ type: 'result', id, stdout: '', stderr: '', exitCode: 0 }));
    expect((await pending).capture.exitCode).toBe(0);
  });
});

describe('advertising', () => {
  it('rejects an invalid tool with a reason and accepts the rest', async () => {
    const started = await startServer();
    const ws = await rawHost(started.url);
    const advertised = await rawAdvertise(ws, [
      SLOW,
      { name: 'bad name!', inputSchema: { type: 'object' } },
      { name: 'notobject', inputSchema: { type: 'string' } },
      { name: 'uncompilable', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
    ]);
    expect(advertised.accepted).toEqual([{ name: 'slow', as: 'alpha__slow' }]);
    const rejected = advertised.rejected as { name: string; reason: string }[];
    expect(rejected.map((r) => r.name).sort()).toEqual(['bad name!', 'notobject', 'uncompilable']);
    for (const r of rejected) expect(r.reason.length).toBeGreaterThan(0);
    expect(started.server.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
  });

  it('refuses an upgrade without a valid host token with HTTP 401', async () => {
    const started = await startServer();
    const ws = new WebSocket(started.url, { headers: { authorization: 'Bearer wrong' } });
    ws.on('error', () => {});
    const [, response] = (await once(ws, 'unexpected-response')) as [unknown, { statusCode: number; destroy(): void }];
    expect(response.statusCode).toBe(401);
    response.destroy();
    ws.terminate();
    expect(HOST_TOKEN).toBeTruthy();
  });
});
