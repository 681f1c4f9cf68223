/**
 * DESIGN §6 through real sockets: each fault settles every affected call exactly once, promptly,
 * as a capture with a distinct exit code and the reason on stderr. Built on @toolwire/testing: real
 * host processes (`startHost(…, {process: true})`), misbehaving hosts (`startRogueHost`) for the
 * frames a real host never sends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { type RogueHost, type TestServer, closeAll, expectCapture, startHost, startRogueHost, startServer, waitForCallInFlight, waitUntil } from '@toolwire/testing';
import { alive, cleanup, repoRoot, tempDir } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await cleanup();
});

const SLOW = { name: 'slow', description: 'answers only when told', inputSchema: { type: 'object' } };
const KIT_TOOLS = join(repoRoot, 'test', 'fixtures', 'kit-tools.ts');
const MANIFEST = join(repoRoot, 'test', 'fixtures', 'tools.json');

/** A raw host `alpha` advertising `slow`, with one call to it in flight. */
async function rogueWithCall(server: TestServer, extra: Parameters<TestServer['call']>[2] = {}) {
  const rogue = await startRogueHost(server, { name: 'alpha', tools: [SLOW] });
  const pending = server.call('alpha__slow', {}, extra);
  const sent = await rogue.nextCall();
  return { rogue, pending, id: sent.id, sent };
}

/** The next call reaches the rogue and its answer is the capture: the session was kept. */
async function answersNext(server: TestServer, rogue: RogueHost, stdout: string): Promise<void> {
  const second = server.call('alpha__slow');
  const frame = await rogue.nextCall();
  rogue.result(frame.id, { stdout });
  expectCapture(await second)
    .toExit(0)
    .withStdout(stdout);
}

describe('host socket closes', () => {
  it('a host process killed mid-call settles its calls 69 at once and its tools leave tools()', async () => {
    const server = await startServer();
    const host = await startHost(server, KIT_TOOLS, { name: 'alpha', process: true });
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    const killedAt = Date.now();
    process.kill(host.pid!, 'SIGKILL');
    const result = await pending;
    expectCapture(result)
      .toExit(69)
      .withFailure('unavailable')
      .withStderr(/toolwire: .*\n$/);
    expect(Date.now() - killedAt).toBeLessThan(1_000);
    await waitUntil(() => server.router.tools().length === 0, 'tools to leave');
    // Until the host comes back, its tools answer 69 (retry later), not 127 (no such tool).
    expectCapture(await server.call('alpha__echo'))
      .toExit(69)
      .withReason(/host alpha is not connected/);
    expectCapture(await server.call('alpha__never_advertised')).toExit(127);
  });
});

describe('host goes silent (half-open)', () => {
  it('a stopped host process is terminated by the heartbeat and its calls settle 69 within 2 intervals', async () => {
    const server = await startServer({ heartbeatMs: 200 });
    const host = await startHost(server, KIT_TOOLS, { name: 'alpha', process: true });
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    const stoppedAt = Date.now();
    host.pause();
    expectCapture(await pending).toExit(69);
    expect(Date.now() - stoppedAt).toBeLessThan(2 * 200 + 300);
    host.resume();
  });
});

describe('bad frames', () => {
  it('an unparsable frame closes 1002 and settles pending calls 76', async () => {
    const server = await startServer();
    const { rogue, pending } = await rogueWithCall(server);
    rogue.garbage();
    expect((await rogue.closed).code).toBe(1002);
    expectCapture(await pending)
      .toExit(76)
      .withFailure('protocol');
  });

  it('invalid UTF-8 in a text frame closes 1007 and settles pending calls 76', async () => {
    const server = await startServer();
    const { rogue, pending } = await rogueWithCall(server);
    rogue.invalidUtf8();
    expect((await rogue.closed).code).toBe(1007);
    expectCapture(await pending).toExit(76);
  });

  it('a binary frame closes 1003 and settles pending calls 76', async () => {
    const server = await startServer();
    const { rogue, pending } = await rogueWithCall(server);
    rogue.binary();
    expect((await rogue.closed).code).toBe(1003);
    expectCapture(await pending).toExit(76);
  });

  it('a frame over maxPayload closes 1009 and settles pending calls 76', async () => {
    const server = await startServer({ maxPayload: 4096 });
    const { rogue, pending, id } = await rogueWithCall(server);
    rogue.oversize(id);
    expect((await rogue.closed).code).toBe(1009);
    expectCapture(await pending).toExit(76);
  });

  it('a wrong-shape frame naming a known call settles that call 76 and keeps the session', async () => {
    const server = await startServer();
    const { rogue, pending, id } = await rogueWithCall(server);
    rogue.wrongShape(id);
    expectCapture(await pending)
      .toExit(76)
      .withReason(/stdout/);
    // The session is kept: the next call still works.
    await answersNext(server, rogue, 'ok');
  });

  it('a result for an unknown id is dropped and the session kept', async () => {
    const server = await startServer();
    const { rogue, pending, id } = await rogueWithCall(server);
    rogue.result('no-such-call', { stdout: 'x' });
    rogue.result('0', { stdout: 'x' });
    rogue.result(id, { stdout: 'mine' });
    expectCapture(await pending)
      .toExit(0)
      .withStdout(/^mine$/);
    expect(rogue.ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('deadline', () => {
  it('settles 124 at the deadline, sends cancel, and drops the late result', async () => {
    const server = await startServer();
    const begun = Date.now();
    const { rogue, pending, id, sent } = await rogueWithCall(server, { deadlineMs: 300 });
    expect(sent.deadlineMs).toBeLessThanOrEqual(300);
    expectCapture(await pending)
      .toExit(124)
      .withReason(/300 ms/);
    expect(Date.now() - begun).toBeGreaterThanOrEqual(290);
    expect(await rogue.cancelOf(id)).toEqual({ type: 'cancel', id, reason: 'deadline' });
    rogue.result(id, { stdout: 'late' });
    // Still a healthy session afterwards.
    await answersNext(server, rogue, 'ok');
  });
});

describe('stop', () => {
  it('sends cancel and settles 130 with the partial output the host returns', async () => {
    const server = await startServer();
    const { rogue, pending, id } = await rogueWithCall(server);
    const cancel = rogue.cancelOf(id);
    server.executor.stop('agent');
    expect(await cancel).toEqual({ type: 'cancel', id, reason: 'stop' });
    rogue.result(id, { stdout: 'half', exitCode: 143 });
    expectCapture(await pending)
      .toExit(130)
      .withStdout(/^half$/)
      .withReason(/stop/);
  });

  it('settles 130 within the cancel grace when the host never answers', async () => {
    const server = await startServer({ cancelGraceMs: 200 });
    const { pending } = await rogueWithCall(server);
    const stoppedAt = Date.now();
    server.executor.stop();
    expectCapture(await pending).toExit(130);
    expect(Date.now() - stoppedAt).toBeLessThan(200 + 300);
  });

  it('kills the tool process tree on the host, grandchildren included', async () => {
    const server = await startServer();
    const piddir = await tempDir();
    await startHost(server, MANIFEST, { name: 'alpha', process: true, env: { PIDDIR: piddir } });
    const pending = server.call('alpha__tree');
    const pids = await waitUntil(async () => {
      const lines = (await readFile(join(piddir, 'pids'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
      return lines.length === 2 ? lines.map(Number) : undefined;
    }, 'the tool to record its pids');
    expect(pids.every(alive)).toBe(true);
    server.executor.stop();
    const result = await pending;
    expectCapture(result).toExit(130).withStdout('started');
    await waitUntil(() => pids.every((pid) => !alive(pid)), 'the tool process tree to be gone', { timeoutMs: 3_000 });
  });
});

describe('same host connects again', () => {
  it('closes the old session 4000, settles its calls 69, never replays, and keeps the new session', async () => {
    const server = await startServer();
    const { rogue: old, pending } = await rogueWithCall(server);
    const fresh = await startRogueHost(server, { name: 'alpha', tools: [SLOW] });
    expect((await old.closed).code).toBe(4000);
    expectCapture(await pending).toExit(69);
    expect(fresh.calls).toEqual([]); // nothing replayed
    expect(server.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
    // The new session answers calls.
    await answersNext(server, fresh, 'new');
  });
});

describe('overload', () => {
  it('a host at its in-flight limit gets new calls settled 75 at once', async () => {
    const server = await startServer({ maxInFlightPerHost: 1 });
    const { rogue, pending, id } = await rogueWithCall(server);
    expectCapture(await server.call('alpha__slow'))
      .toExit(75)
      .withFailure('overloaded');
    rogue.result(id);
    expectCapture(await pending).toExit(0);
  });
});

describe('advertising', () => {
  it('rejects an invalid tool with a reason and accepts the rest', async () => {
    const server = await startServer();
    const rogue = await startRogueHost(server, {
      name: 'alpha',
      tools: [
        SLOW,
        { name: 'bad name!', inputSchema: { type: 'object' } },
        { name: 'notobject', inputSchema: { type: 'string' } },
        { name: 'uncompilable', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
      ],
    });
    expect(rogue.advertised.accepted).toEqual([{ name: 'slow', as: 'alpha__slow' }]);
    const rejected = rogue.advertised.rejected as { name: string; reason: string }[];
    expect(rejected.map((r) => r.name).sort()).toEqual(['bad name!', 'notobject', 'uncompilable']);
    for (const r of rejected) expect(r.reason.length).toBeGreaterThan(0);
    expect(server.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
  });

  it('refuses an upgrade without a valid host token with HTTP 401', async () => {
    const server = await startServer();
    expect(await server.hostToken('alpha')).toBeTruthy();
    const ws = new WebSocket(server.url, { headers: { authorization: 'Bearer wrong' } });
    ws.on('error', () => {});
    const [, response] = (await once(ws, 'unexpected-response')) as [unknown, { statusCode: number; destroy(): void }];
    expect(response.statusCode).toBe(401);
    response.destroy();
    ws.terminate();
  });
});
