/**
 * Issue 3 §3 — bad frames, one by one, through real sockets. Frames `ws` refuses to build (unknown
 * opcodes, RSV bits, unmasked, oversize headers, bad close frames) are written byte by byte over a
 * raw `net.Socket` that did the WebSocket handshake by hand. For each: only that connection is
 * affected, the server answers with the right close code, the calls pending on that connection
 * settle 76 (a protocol violation), and the server keeps serving another host.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { WebSocket } from 'ws';
import type { RoutedCapture } from '@toolwire/server';
import { type TestServer, closeAll, startServer } from '@toolwire/testing';
import { cleanup, rawAdvertise, text } from '../helpers.js';
import { Opcode, SLOW, buildFrame, drivenHost, rawSocketAdvertise, rawSocketHost, recordingLogger, waitFor, type DrivenHost } from './harness.js';

afterEach(async () => {
  await cleanup();
  await closeAll();
});

const MAX_PAYLOAD = 64 * 1024;

interface Scene {
  started: TestServer;
  errors: () => unknown[];
  /** beta, with one call pending: must be untouched by whatever alpha does. */
  beta: DrivenHost;
  betaCall: Promise<RoutedCapture | undefined>;
  betaId: string;
}

function route(started: TestServer, name: string, tag = name) {
  return started.server.router.route({ id: tag, name, input: { tag }, workspace: '', agent: 'agent', signal: new AbortController().signal });
}

async function scene(extra: Record<string, unknown> = {}): Promise<Scene> {
  const log = recordingLogger();
  const started = await startServer({ logger: log.logger, maxPayload: MAX_PAYLOAD, ...extra });
  const beta = await drivenHost(started, [{ name: 'other', inputSchema: { type: 'object' } }], 'beta');
  const frame = beta.nextCall();
  const betaCall = route(started, 'beta__other');
  const betaId = (await frame).id as string;
  return { started, errors: log.errors, beta, betaCall, betaId };
}

/** alpha over a raw byte-level socket, with two calls pending. */
async function alphaWithCalls(s: Scene) {
  const alpha = await rawSocketHost(s.started.url, await s.started.hostToken('alpha'));
  await rawSocketAdvertise(alpha, [SLOW]);
  const first = alpha.next('call');
  const one = route(s.started, 'alpha__slow', 'one');
  const id = (await first).id as string;
  const second = alpha.next('call');
  const two = route(s.started, 'alpha__slow', 'two');
  await second;
  return { alpha, id, calls: [one, two] };
}

/** beta's call still pending, then answered; a new alpha connection serves a call; nothing threw. */
async function expectOthersUnaffected(s: Scene): Promise<void> {
  expect(s.started.server.router.hosts().find((h) => h.name === 'beta')?.inFlight).toBe(1);
  s.beta.answer(s.betaId, 'beta ok');
  expect(text((await s.betaCall)!.stdout)).toBe('beta ok');
  const fresh = await drivenHost(s.started);
  const frame = fresh.nextCall();
  const call = route(s.started, 'alpha__slow');
  fresh.answer((await frame).id as string, 'fresh ok');
  expect(text((await call)!.stdout)).toBe('fresh ok');
  expect(s.errors()).toEqual([]);
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};

/** Frames a conforming client never sends, and the close code ws (or toolwire) answers with. */
const FATAL: { name: string; frames: () => Buffer[]; code: number }[] = [
  { name: 'invalid UTF-8 in a text frame', frames: () => [buildFrame({ opcode: Opcode.TEXT, payload: Buffer.from([0x7b, 0xc3, 0x28, 0x7d]) })], code: 1007 },
  {
    name: 'invalid UTF-8 split across text fragments',
    frames: () => [
      buildFrame({ opcode: Opcode.TEXT, fin: false, payload: Buffer.from([0x22, 0xe2, 0x82]) }),
      buildFrame({ opcode: Opcode.CONTINUATION, payload: Buffer.from([0x41, 0x22]) }),
    ],
    code: 1007,
  },
  { name: 'an unknown data opcode (0x3)', frames: () => [buildFrame({ opcode: 0x3, payload: '{}' })], code: 1002 },
  { name: 'an unknown control opcode (0xB)', frames: () => [buildFrame({ opcode: 0xb })], code: 1002 },
  { name: 'RSV1 set (a compressed frame, compression not negotiated)', frames: () => [buildFrame({ opcode: Opcode.TEXT, rsv: 4, payload: '{}' })], code: 1002 },
  { name: 'RSV2 set', frames: () => [buildFrame({ opcode: Opcode.TEXT, rsv: 2, payload: '{}' })], code: 1002 },
  { name: 'RSV3 set', frames: () => [buildFrame({ opcode: Opcode.TEXT, rsv: 1, payload: '{}' })], code: 1002 },
  { name: 'an unmasked client frame', frames: () => [buildFrame({ opcode: Opcode.TEXT, mask: false, payload: '{}' })], code: 1002 },
  { name: 'a continuation frame with no message started', frames: () => [buildFrame({ opcode: Opcode.CONTINUATION, payload: '{}' })], code: 1002 },
  {
    name: 'a new text frame inside a fragmented message',
    frames: () => [buildFrame({ opcode: Opcode.TEXT, fin: false, payload: '{' }), buildFrame({ opcode: Opcode.TEXT, payload: '}' })],
    code: 1002,
  },
  { name: 'a fragmented ping', frames: () => [buildFrame({ opcode: Opcode.PING, fin: false })], code: 1002 },
  { name: 'a ping longer than 125 bytes', frames: () => [buildFrame({ opcode: Opcode.PING, payload: Buffer.alloc(126) })], code: 1002 },
  { name: 'a binary frame', frames: () => [buildFrame({ opcode: Opcode.BINARY, payload: '{"type":"result"}' })], code: 1003 },
  { name: 'a frame header claiming more than maxPayload', frames: () => [buildFrame({ opcode: Opcode.TEXT, claimedLength: BigInt(MAX_PAYLOAD + 1) })], code: 1009 },
  { name: 'a frame header claiming 2^63 bytes', frames: () => [buildFrame({ opcode: Opcode.TEXT, claimedLength: 2n ** 63n })], code: 1009 },
  {
    name: 'fragments adding up to more than maxPayload',
    frames: () => [
      buildFrame({ opcode: Opcode.TEXT, fin: false, payload: 'x'.repeat(MAX_PAYLOAD / 2) }),
      buildFrame({ opcode: Opcode.CONTINUATION, fin: false, payload: 'x'.repeat(MAX_PAYLOAD / 2) }),
      buildFrame({ opcode: Opcode.CONTINUATION, payload: 'x' }),
    ],
    code: 1009,
  },
  { name: 'a close frame with a 1-byte body', frames: () => [buildFrame({ opcode: Opcode.CLOSE, payload: Buffer.from([3]) })], code: 1002 },
  { name: 'a close frame with a reserved code (1005)', frames: () => [buildFrame({ opcode: Opcode.CLOSE, payload: u16(1005) })], code: 1002 },
  { name: 'a close frame with an out-of-range code (999)', frames: () => [buildFrame({ opcode: Opcode.CLOSE, payload: u16(999) })], code: 1002 },
  {
    name: 'a close frame whose reason is invalid UTF-8',
    frames: () => [buildFrame({ opcode: Opcode.CLOSE, payload: Buffer.concat([u16(1000), Buffer.from([0xff, 0xfe])]) })],
    code: 1007,
  },
  { name: 'a text frame that is not JSON', frames: () => [buildFrame({ opcode: Opcode.TEXT, payload: '{"type": "result", ' })], code: 1002 },
  { name: 'a second hello', frames: () => [buildFrame({ opcode: Opcode.TEXT, payload: '{"type":"hello","protocol":1}' })], code: 1002 },
];

describe('frames that end the connection', () => {
  it.each(FATAL)('$name → close $code, the connection’s pending calls settle 76, other hosts unaffected', async ({ frames, code }) => {
    const s = await scene();
    const { alpha, calls } = await alphaWithCalls(s);
    for (const f of frames()) alpha.write(f);
    expect(await alpha.closed).toBe(code);
    for (const capture of await Promise.all(calls)) {
      expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
      expect(text(capture!.stderr)).toMatch(new RegExp(`^toolwire: protocol violation by host alpha: .*\\(close ${code} [A-Z_]+\\)\\n$`));
    }
    await waitFor(() => !s.started.server.router.hosts().some((h) => h.name === 'alpha'), 'alpha to leave');
    await expectOthersUnaffected(s);
  });

  it('a valid close frame from the host is a disconnect: its calls settle 69, not 76', async () => {
    const s = await scene();
    const { alpha, calls } = await alphaWithCalls(s);
    alpha.write(buildFrame({ opcode: Opcode.CLOSE, payload: Buffer.concat([u16(1000), Buffer.from('bye')]) }));
    for (const capture of await Promise.all(calls)) {
      expect(capture!.exitCode).toBe(69);
      expect(text(capture!.stderr)).toMatch(/toolwire: host alpha disconnected \(close 1000 NORMAL: bye\)\n$/);
    }
    await expectOthersUnaffected(s);
  });
});

describe('compression', () => {
  it('is not negotiated by default: an offer of permessage-deflate is answered without it, and a compressed frame closes 1002', async () => {
    const s = await scene();
    const alpha = await rawSocketHost(s.started.url, await s.started.hostToken('alpha'), 'permessage-deflate; client_max_window_bits');
    expect(alpha.headers.toLowerCase()).not.toContain('sec-websocket-extensions');
    await rawSocketAdvertise(alpha, [SLOW]);
    const frame = alpha.next('call');
    const call = route(s.started, 'alpha__slow');
    await frame;
    alpha.write(buildFrame({ opcode: Opcode.TEXT, rsv: 4, payload: Buffer.from([0xab, 0x56, 0x2a, 0xa9, 0x2c, 0x48, 0x05, 0x00]) }));
    expect(await alpha.closed).toBe(1002);
    expect((await call)!.exitCode).toBe(76);
    await expectOthersUnaffected(s);
  });

  it('when enabled, a compressed frame that inflates past maxPayload closes 1009 and settles the calls 76', async () => {
    const s = await scene({ perMessageDeflate: true });
    const alpha = new WebSocket(s.started.url, { headers: { authorization: `Bearer ${await s.started.hostToken('alpha')}` }, perMessageDeflate: true });
    alpha.on('error', () => {});
    await once(alpha, 'open');
    expect(alpha.extensions).toContain('permessage-deflate');
    await rawAdvertise(alpha, [SLOW]);
    const frame = new Promise<void>((resolve) => alpha.on('message', (d: Buffer) => JSON.parse(d.toString()).type === 'call' && resolve()));
    const call = route(s.started, 'alpha__slow');
    await frame;
    const closed = once(alpha, 'close').then(([code]) => code as number);
    const bomb = JSON.stringify({ type: 'result', id: 'x', stdout: 'A'.repeat(MAX_PAYLOAD * 16), stderr: '', exitCode: 0 });
    alpha.send(bomb, { compress: true });
    // ~1 MiB of text compresses to ~1 KiB on the wire; the server refuses it while inflating.
    expect(await closed).toBe(1009);
    expect((await call)!.exitCode).toBe(76);
    await expectOthersUnaffected(s);
  });
});

describe('frames that keep the connection', () => {
  it('wrong-shape JSON naming a pending call settles that call 76; without a known id it settles nothing; the session and its other call live on', async () => {
    const s = await scene();
    const { alpha, id, calls } = await alphaWithCalls(s);
    const [one, two] = calls;
    alpha.sendJson({ type: 'result', id: s.betaId, stdout: 1 }); // wrong shape, names beta's call: not alpha's to settle
    alpha.sendJson({ type: 'result', stdout: 'no id' });
    alpha.sendJson({ type: 'nonsense', id: 'no-such-call' });
    alpha.sendJson(42);
    alpha.sendJson(['type', 'result']);
    alpha.sendJson(null);
    alpha.sendJson({ type: ['[', '['] });
    // A nested `type` 30 000 levels deep (60 KB): describing it once overflowed the stack in the codec.
    alpha.write(buildFrame({ opcode: Opcode.TEXT, payload: `{"type":${'['.repeat(30_000)}${']'.repeat(30_000)}}` }));
    alpha.write(buildFrame({ opcode: Opcode.PONG, payload: 'unsolicited' }));
    alpha.write(buildFrame({ opcode: Opcode.PING, payload: 'hi' }));
    alpha.sendJson({ type: 'result', id, stdout: 42, stderr: '', exitCode: 0 });
    const capture = (await one)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stderr)).toMatch(/^toolwire: host alpha sent a wrong-shape frame: result: \/stdout must be string\n$/);
    // The ping was answered with a pong echoing its payload, and the session is open.
    await waitFor(() => alpha.frames.some((f) => f.opcode === Opcode.PONG && f.payload.toString() === 'hi'), 'the pong');
    const twoId = [...alpha.frames].map((f) => (f.opcode === Opcode.TEXT ? JSON.parse(f.payload.toString()) : {})).filter((m) => m.type === 'call')[1].id;
    alpha.sendJson({ type: 'result', id: twoId, stdout: 'two ok', stderr: '', exitCode: 0 });
    expect(text((await two)!.stdout)).toBe('two ok');
    expect(s.started.server.router.hosts().find((h) => h.name === 'alpha')?.inFlight).toBe(0);
    await expectOthersUnaffected(s);
  });

  it('more than maxBadFrames wrong-shape frames close 1008 and settle the pending calls 76', async () => {
    const s = await scene({ maxBadFrames: 3 });
    const { alpha, calls } = await alphaWithCalls(s);
    for (let i = 0; i < 4; i++) alpha.sendJson({ type: 'result', id: `nope-${i}` });
    expect(await alpha.closed).toBe(1008);
    for (const capture of await Promise.all(calls)) expect(capture!.exitCode).toBe(76);
    await expectOthersUnaffected(s);
  });
});
