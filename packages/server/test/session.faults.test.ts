/**
 * DESIGN §6 faults through real sockets: each one settles every affected call exactly once, with the
 * right exit code, and closes (or keeps) the session as the table says.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Router } from '../src/router/router.js';
import {
  SLOW,
  closeCode,
  helloAndAdvertise,
  hostWithCall,
  nextFrame,
  rawHost,
  routedCall,
  send,
  startEndpoint,
  teardown,
  text,
  waitFor,
} from './endpoint.harness.js';

afterEach(teardown);

describe('unparsable, binary and oversize frames', () => {
  it('garbage text closes 1002 and settles pending calls 76', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    ws.send('this is not json');
    expect(await closed).toBe(1002);
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stderr)).toBe('toolwire: protocol violation by host alpha: frame is not JSON (close 1002 PROTOCOL_ERROR)\n');
    await waitFor(() => h.router.tools().length === 0 && h.endpoint.sessionCount === 0, 'the session to end');
  });

  it('invalid UTF-8 in a text frame closes 1007 and settles pending calls 76', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    expect(await closed).toBe(1007);
    expect((await pending)!.exitCode).toBe(76);
  });

  it('a binary frame closes 1003 and settles pending calls 76', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    ws.send(Buffer.from('{"type":"result"}'), { binary: true });
    expect(await closed).toBe(1003);
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/binary frame \(close 1003 UNSUPPORTED_DATA\)\n$/);
  });

  it('a frame over maxPayload closes 1009 and settles pending calls 76', async () => {
    const h = await startEndpoint({ maxPayload: 4096 });
    const { ws, pending, id } = await hostWithCall(h);
    const closed = closeCode(ws);
    send(ws, { type: 'result', id, stdout: 'x'.repeat(10_000), stderr: '', exitCode: 0 });
    expect(await closed).toBe(1009);
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/close 1009 MESSAGE_TOO_BIG/);
  });
});

describe('wrong-shape frames', () => {
  it('a wrong-shape frame naming a pending call settles that call 76 with the ajv error and keeps the session', async () => {
    const h = await startEndpoint();
    const { ws, pending, id } = await hostWithCall(h);
    const other = h.router.route(routedCall('alpha__slow').call);
    send(ws, { type: 'result', id, stdout: 42 });
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stderr)).toMatch(/^toolwire: host alpha sent a wrong-shape frame: result: .*\n$/);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(h.router.hosts()[0]!.inFlight).toBe(1); // the other call is untouched
    const next = nextFrame(ws, 'call');
    const third = h.router.route(routedCall('alpha__slow').call);
    send(ws, { type: 'result', id: (await next).id, stdout: 'ok', stderr: '', exitCode: 0 });
    expect(text((await third)!.stdout)).toBe('ok');
    await h.endpoint.close();
    expect((await other)!.exitCode).toBe(69);
  });

  it('more than maxBadFrames wrong-shape frames close 1008 and settle pending calls 76', async () => {
    const h = await startEndpoint({ maxBadFrames: 3 });
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    for (let i = 0; i < 3; i++) send(ws, { type: 'nonsense', n: i });
    send(ws, [1, 2, 3]);
    expect(await closed).toBe(1008);
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/too many wrong-shape frames/);
  });
});

describe('messages not allowed in the state', () => {
  it.each([
    ['a result before hello', { type: 'result', id: 'x', stdout: '', stderr: '', exitCode: 0 }],
    ['an advertise before hello', { type: 'advertise', tools: [] }],
    ['a wrong-shape hello', { type: 'hello', protocol: 'one' }],
    ['a hello of another protocol version', { type: 'hello', protocol: 2 }],
  ])('%s closes 1002', async (_label, frame) => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    const closed = closeCode(ws);
    send(ws, frame);
    expect(await closed).toBe(1002);
  });

  it('a second hello closes 1002 and settles pending calls 76', async () => {
    const h = await startEndpoint();
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    send(ws, { type: 'hello', protocol: 1 });
    expect(await closed).toBe(1002);
    expect(text((await pending)!.stderr)).toMatch(/second hello/);
  });

  it('no hello within helloTimeoutMs closes 1008', async () => {
    const h = await startEndpoint({ helloTimeoutMs: 100 });
    const ws = await rawHost(h.url);
    const began = Date.now();
    expect(await closeCode(ws)).toBe(1008);
    expect(Date.now() - began).toBeLessThan(1_000);
    await waitFor(() => h.endpoint.sessionCount === 0, 'the session to be dropped');
  });
});

describe('same host connects again', () => {
  it('closes the old session 4000, settles its calls 69, never replays, and the old close never removes the new session', async () => {
    const h = await startEndpoint();
    const { ws: old, pending } = await hostWithCall(h);
    // The old host stops reading, so its socket closes only after the new session is established.
    const oldSocket = (old as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    oldSocket.pause();
    const oldClosed = closeCode(old);
    const fresh = await rawHost(h.url);
    let replayed = false;
    fresh.on('message', (d: Buffer) => {
      if (JSON.parse(d.toString()).type === 'call') replayed = true;
    });
    const { welcome } = await helloAndAdvertise(fresh, [SLOW]);
    expect(welcome).toMatchObject({ type: 'welcome', protocol: 1, host: 'alpha' });
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture.stderr)).toBe('toolwire: host alpha was replaced by a newer connection (close 4000 REPLACED)\n');
    expect(h.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
    oldSocket.resume();
    expect(await oldClosed).toBe(4000);
    await waitFor(() => h.endpoint.sessionCount === 1, 'the old socket to close on the server');
    expect(h.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
    expect(h.router.hosts().map((x) => x.name)).toEqual(['alpha']);
    expect(replayed).toBe(false); // a replay would have preceded welcome/advertised
    const next = nextFrame(fresh, 'call');
    const second = h.router.route(routedCall('alpha__slow').call);
    send(fresh, { type: 'result', id: (await next).id, stdout: 'new', stderr: '', exitCode: 0 });
    expect(text((await second)!.stdout)).toBe('new');
  });
});

describe('heartbeat', () => {
  it('terminates a host that stops answering pings and settles its calls 69 within 2 intervals', async () => {
    const h = await startEndpoint({ heartbeatMs: 100 });
    const ws = await rawHost(h.url, undefined, { autoPong: false });
    // It answers until its tools are listed (however long the schema's first compile takes), then stops.
    const answer = (data: Buffer): void => ws.pong(data);
    ws.on('ping', answer);
    await helloAndAdvertise(ws, [SLOW]);
    ws.off('ping', answer);
    const began = Date.now();
    const capture = (await h.router.route(routedCall('alpha__slow', { deadlineMs: 10_000 }).call))!;
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture.stderr)).toMatch(/toolwire: host alpha lost: no pong within 100 ms/);
    expect(Date.now() - began).toBeLessThan(2 * 100 + 300);
    expect(await closeCode(ws)).toBe(1006);
    expect(h.router.tools()).toEqual([]);
  });

  it('keeps a host that answers pings', async () => {
    const h = await startEndpoint({ heartbeatMs: 30 });
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    let pings = 0;
    ws.on('ping', () => pings++);
    await waitFor(() => pings >= 4, 'four pings');
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(h.router.tools()).toHaveLength(1);
  });

  it('keeps a host whose pong came while the server’s event loop was stalled past two intervals (the late beat judges nothing)', async () => {
    const h = await startEndpoint({ heartbeatMs: 100 });
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    let pings = 0;
    ws.on('ping', () => {
      // ws has written the pong already; this process — the server's too — stalls 2.5 intervals
      // before the server reads it. When the loop runs again its timers come before its socket reads.
      if (++pings === 1) for (const until = Date.now() + 250; Date.now() < until;);
    });
    await waitFor(() => pings >= 4, 'four pings');
    expect(ws.readyState).toBe(WebSocket.OPEN);
    expect(h.router.tools()).toHaveLength(1);
  });
});

describe('internal errors', () => {
  it('a bug while handling a frame ends that session with 1011 instead of crashing the server', async () => {
    class BrokenRouter extends Router {
      override advertise(): never {
        throw new Error('bug in advertise');
      }
    }
    const h = await startEndpoint({}, (options) => new BrokenRouter(options));
    const ws = await rawHost(h.url);
    const welcome = nextFrame(ws, 'welcome');
    send(ws, { type: 'hello', protocol: 1 });
    await welcome;
    const closed = closeCode(ws);
    send(ws, { type: 'advertise', tools: [SLOW] });
    expect(await closed).toBe(1011);
    await waitFor(() => h.endpoint.sessionCount === 0 && h.router.hosts().length === 0, 'the session to end');
    // The endpoint still accepts hosts.
    const again = await rawHost(h.url);
    const next = nextFrame(again, 'welcome');
    send(again, { type: 'hello', protocol: 1 });
    expect((await next).host).toBe('alpha');
  });
});
