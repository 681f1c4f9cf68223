/**
 * Calls through a real host session: an http.Server on 127.0.0.1:0, a raw ws client acting as the
 * tool host (frames sent by hand), and `router.route()` as the executor would call it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import {
  BETA_TOKEN,
  SLOW,
  closeCode,
  helloAndAdvertise,
  hostWithCall,
  nextFrame,
  rawHost,
  recordingLogger,
  routedCall,
  send,
  startEndpoint,
  teardown,
  text,
  waitFor,
} from './endpoint.harness.js';

afterEach(teardown);

describe('result round trip', () => {
  it('sends a call frame with a fresh wire id and returns the host result', async () => {
    const h = await startEndpoint();
    const { ws, pending, id, sent } = await hostWithCall(h, { input: { path: 'README.md' }, deadlineMs: 5_000 });
    expect(sent).toEqual({ type: 'call', id, tool: 'slow', input: { path: 'README.md' }, workspace: '/ws', agent: 'agent', deadlineMs: 5_000 });
    expect(id).not.toBe('caller-1');
    send(ws, { type: 'result', id, stdout: 'héllo\n', stderr: 'warn\n', exitCode: 3 });
    const capture = await pending;
    expect(capture).toEqual({ stdout: Buffer.from('héllo\n'), stderr: Buffer.from('warn\n'), exitCode: 3 });
    expect(h.router.hosts()[0]!.inFlight).toBe(0);
  });

  it('carries non-UTF-8 bytes exactly via base64', async () => {
    const h = await startEndpoint();
    const { ws, pending, id } = await hostWithCall(h);
    const raw = Buffer.from([0xff, 0x00, 0xfe, 0x41, 0x0a]);
    send(ws, { type: 'result', id, stdout: raw.toString('base64'), stdoutEncoding: 'base64', stderr: '', exitCode: 0, failure: 'host_error' });
    const capture = (await pending)!;
    expect([...capture.stdout]).toEqual([...raw]);
    expect(capture.stderr.length).toBe(0);
    expect(capture.failure).toBe('host_error');
  });

  it('gives concurrent calls with the same caller id distinct wire ids', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    const frames: Record<string, unknown>[] = [];
    ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString())));
    const one = h.router.route(routedCall('alpha__slow', { input: { n: 1 } }).call);
    const two = h.router.route(routedCall('alpha__slow', { input: { n: 2 } }).call);
    await waitFor(() => frames.length === 2, 'two call frames');
    expect(frames[0]!.id).not.toBe(frames[1]!.id);
    send(ws, { type: 'result', id: frames[1]!.id, stdout: 'two', stderr: '', exitCode: 0 });
    send(ws, { type: 'result', id: frames[0]!.id, stdout: 'one', stderr: '', exitCode: 0 });
    expect(text((await one)!.stdout)).toBe('one');
    expect(text((await two)!.stdout)).toBe('two');
  });
});

describe('deadline', () => {
  it('settles 124 at the deadline, sends cancel, and drops the late result', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger });
    const begun = Date.now();
    const { ws, pending, id } = await hostWithCall(h, { deadlineMs: 150 });
    const cancel = nextFrame(ws, 'cancel');
    const capture = (await pending)!;
    expect(Date.now() - begun).toBeGreaterThanOrEqual(145);
    expect(capture).toMatchObject({ exitCode: 124, failure: 'deadline' });
    expect(text(capture.stderr)).toBe('toolwire: deadline of 150 ms exceeded\n');
    expect(await cancel).toEqual({ type: 'cancel', id, reason: 'deadline' });
    send(ws, { type: 'result', id, stdout: 'late', stderr: '', exitCode: 0 });
    await waitFor(() => entries.some((e) => e.level === 'warn' && (e.obj as { id?: string }).id === id), 'late result logged');
    expect(ws.readyState).toBe(WebSocket.OPEN);
  });

  it('uses the server default deadline when the call sets none', async () => {
    const h = await startEndpoint({ deadlineMs: 120 });
    const { pending, sent } = await hostWithCall(h);
    expect(sent.deadlineMs).toBe(120);
    expect((await pending)!.exitCode).toBe(124);
  });
});

describe('stop', () => {
  it('sends cancel and settles 130 keeping the partial output the host returns', async () => {
    const h = await startEndpoint();
    const { ws, pending, id, controller } = await hostWithCall(h);
    const cancel = nextFrame(ws, 'cancel');
    controller.abort();
    expect(await cancel).toEqual({ type: 'cancel', id, reason: 'stop' });
    send(ws, { type: 'result', id, stdout: 'half', stderr: 'killed\n', exitCode: 143 });
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(130);
    expect(capture.failure).toBe('cancelled');
    expect(text(capture.stdout)).toBe('half');
    expect(text(capture.stderr)).toBe('killed\ntoolwire: cancelled by stop\n');
  });

  it('settles 130 at the cancel grace when the host never answers', async () => {
    const h = await startEndpoint({ cancelGraceMs: 100 });
    const { pending, controller } = await hostWithCall(h, { deadlineMs: 60_000 });
    const stoppedAt = Date.now();
    controller.abort();
    const capture = (await pending)!;
    const took = Date.now() - stoppedAt;
    expect(capture.exitCode).toBe(130);
    expect(took).toBeGreaterThanOrEqual(95);
    expect(took).toBeLessThan(1_000);
    expect(text(capture.stderr)).toMatch(/^toolwire: cancelled by stop.*100 ms\n$/);
  });

  it('settles 130 at once without sending when the signal is already aborted', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    const onMessage = vi.fn();
    ws.on('message', onMessage);
    const { call, controller } = routedCall('alpha__slow');
    controller.abort();
    expect((await h.router.route(call))!.exitCode).toBe(130);
    // A round trip on the same socket proves nothing was sent before it.
    const advertised = nextFrame(ws, 'advertised');
    send(ws, { type: 'advertise', tools: [SLOW] });
    await advertised;
    expect(onMessage).toHaveBeenCalledTimes(1);
  });
});

describe('host socket closes mid-call', () => {
  it('settles every pending call 69 at once, naming the close, and its tools leave once', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    const second = h.router.route(routedCall('alpha__slow').call);
    await waitFor(() => h.router.hosts()[0]?.inFlight === 2, 'two calls in flight');
    const changes = vi.fn();
    h.router.on('toolsChanged', changes);
    ws.terminate(); // RST-like: no close frame
    const [a, b] = await Promise.all([pending, second]);
    for (const capture of [a!, b!]) {
      expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
      expect(text(capture.stderr)).toMatch(/^toolwire: host alpha disconnected \(close 1006 ABNORMAL_CLOSURE\)\n$/);
    }
    expect(h.router.tools()).toEqual([]);
    expect(h.router.hosts()).toEqual([]);
    expect(changes).toHaveBeenCalledTimes(1);
    // Its tools answer 69 (host not connected, retry later) until it advertises again.
    expect((await h.router.route(routedCall('alpha__slow').call))?.exitCode).toBe(69);
  });

  it('names a clean close code and reason', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    ws.close(1000, 'bye');
    expect(text((await pending)!.stderr)).toBe('toolwire: host alpha disconnected (close 1000 NORMAL: bye)\n');
  });
});

describe('overload', () => {
  it('settles new calls 75 at once when the host is at its in-flight limit', async () => {
    const h = await startEndpoint({ maxInFlightPerHost: 1 });
    const { ws, pending, id } = await hostWithCall(h);
    const over = (await h.router.route(routedCall('alpha__slow').call))!;
    expect(over).toMatchObject({ exitCode: 75, failure: 'overloaded' });
    expect(text(over.stderr)).toMatch(/toolwire: host alpha is overloaded: 1 calls in flight \(limit 1\)/);
    send(ws, { type: 'result', id, stdout: '', stderr: '', exitCode: 0 });
    expect((await pending)!.exitCode).toBe(0);
  });

  it('settles new calls 75 at once when the socket buffer is over maxBufferedBytesPerHost', async () => {
    const h = await startEndpoint({ maxBufferedBytesPerHost: 64 * 1024 });
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    (ws as unknown as { _socket: { pause(): void } })._socket.pause(); // the host stops reading
    const big = { call: routedCall('alpha__slow', { input: { blob: 'x'.repeat(32 * 1024 * 1024) } }).call };
    const first = h.router.route(big.call);
    const over = (await h.router.route(routedCall('alpha__slow').call))!;
    expect(over).toMatchObject({ exitCode: 75, failure: 'overloaded' });
    expect(text(over.stderr)).toMatch(/bytes buffered \(limit 65536\)/);
    ws.terminate();
    expect((await first)!.exitCode).toBe(69);
  });
});

describe('results that match no pending call', () => {
  it('drops and logs a result for an unknown id and keeps the session', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger });
    const { ws, pending, id } = await hostWithCall(h);
    send(ws, { type: 'result', id: 'no-such-call', stdout: 'x', stderr: '', exitCode: 0 });
    send(ws, { type: 'result', id: 'caller-1', stdout: 'x', stderr: '', exitCode: 0 }); // the caller's id is not a wire id
    send(ws, { type: 'result', id, stdout: 'mine', stderr: '', exitCode: 0 });
    expect(text((await pending)!.stdout)).toBe('mine');
    send(ws, { type: 'result', id, stdout: 'again', stderr: '', exitCode: 0 }); // already settled
    await waitFor(() => entries.filter((e) => /unknown or settled/.test(String(e.msg))).length === 3, 'three dropped results logged');
    expect(ws.readyState).toBe(WebSocket.OPEN);
  });

  it("drops a result for another session's call id", async () => {
    const h = await startEndpoint();
    const { pending, id } = await hostWithCall(h);
    const beta = await rawHost(h.url, BETA_TOKEN);
    await helloAndAdvertise(beta, [SLOW]);
    send(beta, { type: 'result', id, stdout: 'forged', stderr: '', exitCode: 0 });
    // beta's own round trip proves its frame was processed; alpha's call is still pending.
    const frame = nextFrame(beta, 'call');
    const own = h.router.route(routedCall('beta__slow').call);
    send(beta, { type: 'result', id: (await frame).id, stdout: 'beta', stderr: '', exitCode: 0 });
    expect(text((await own)!.stdout)).toBe('beta');
    expect(h.router.hosts().find((x) => x.name === 'alpha')!.inFlight).toBe(1);
    await h.endpoint.close();
    expect((await pending)!.exitCode).toBe(69);
    expect(beta.readyState === WebSocket.CLOSED || (await closeCode(beta)) === 1001).toBe(true);
  });
});
