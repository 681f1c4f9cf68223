/**
 * Issue 3 §3 — property (fast-check) against a live session: thousands of random frames from a host
 * with calls pending — random JSON, near-miss results naming real and unknown ids, hostile nesting,
 * binary and oversize frames, and (over a raw socket) random opcodes, RSV bits, masks, lengths and
 * bytes. After each run the host goes away; then every call has settled exactly once, nothing is
 * pending, no handler threw, and another host is still served.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { WebSocket } from 'ws';
import type { RoutedCapture } from '@toolwire/server';
import { type TestServer, closeAll, startServer } from '@toolwire/testing';
import { cleanup, text } from '../helpers.js';
import { SLOW, buildFrame, drivenHost, rawSocketAdvertise, rawSocketHost, recordingLogger, waitFor, type DrivenHost } from './harness.js';

const MAX_PAYLOAD = 32 * 1024;
const CALLS_PER_RUN = 3;

let started: TestServer;
let log: ReturnType<typeof recordingLogger>;
let beta: DrivenHost;
let betaCall: Promise<RoutedCapture | undefined>;
let betaId: string;

beforeAll(async () => {
  log = recordingLogger();
  started = await startServer({
    logger: log.logger,
    maxPayload: MAX_PAYLOAD,
    maxBadFrames: 8,
    maxConnectionsPerHost: 64,
    cancelGraceMs: 50,
  });
  beta = await drivenHost(started, [{ name: 'other', inputSchema: { type: 'object' } }], 'beta');
  const frame = beta.nextCall();
  betaCall = route('beta__other', 'beta');
  betaId = (await frame).id as string;
});
afterAll(async () => {
  await cleanup();
  await closeAll();
});

function route(name: string, tag: string, extra: { signal?: AbortSignal; deadlineMs?: number } = {}) {
  return started.server.router.route({
    id: tag,
    name,
    input: { tag },
    workspace: '',
    agent: 'agent',
    signal: extra.signal ?? new AbortController().signal,
    ...(extra.deadlineMs && { deadlineMs: extra.deadlineMs }),
  });
}

/** A JSON frame; `{id: k}` placeholders (k < CALLS_PER_RUN) become the k-th pending call's real id. */
type Spec = { kind: 'json'; value: unknown } | { kind: 'raw'; text: string } | { kind: 'binary'; bytes: Uint8Array } | { kind: 'stop'; k: number };

const idRef = fc.oneof(
  fc.integer({ min: 0, max: CALLS_PER_RUN - 1 }).map((k) => ({ ref: k })),
  fc.constantFrom('0', '', 'unknown', '__proto__', 'constructor', 'x'.repeat(129)),
  fc.jsonValue(),
);
const result = fc.record(
  {
    type: fc.constant('result'),
    id: idRef,
    stdout: fc.oneof(fc.string({ maxLength: 40 }), fc.jsonValue()),
    stderr: fc.oneof(fc.string({ maxLength: 40 }), fc.jsonValue()),
    stdoutEncoding: fc.oneof(fc.constant('base64'), fc.jsonValue()),
    exitCode: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer(), fc.double(), fc.jsonValue()),
    failure: fc.oneof(fc.constantFrom('deadline', 'protocol', 'bogus'), fc.jsonValue()),
  },
  { requiredKeys: ['type', 'id'] },
);
const other = fc.record(
  {
    type: fc.oneof(fc.constantFrom('hello', 'advertise', 'result', 'call', 'welcome', ''), fc.jsonValue()),
    id: idRef,
    protocol: fc.oneof(fc.constant(1), fc.jsonValue()),
    tools: fc.oneof(fc.constant([SLOW]), fc.array(fc.jsonValue(), { maxLength: 3 }), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
const deep = fc
  .tuple(fc.integer({ min: 100, max: 15_000 }), fc.constantFrom('type', 'id', 'stdout', 'tools'))
  .map(([n, key]) => `{"type":"result","${key}":${'['.repeat(n)}${']'.repeat(n)}}`);
const spec: fc.Arbitrary<Spec> = fc.oneof(
  { arbitrary: result.map((value) => ({ kind: 'json' as const, value })), weight: 6 },
  { arbitrary: other.map((value) => ({ kind: 'json' as const, value })), weight: 2 },
  { arbitrary: fc.jsonValue().map((value) => ({ kind: 'json' as const, value })), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 60 }).map((t) => ({ kind: 'raw' as const, text: t })), weight: 2 },
  { arbitrary: deep.map((t) => ({ kind: 'raw' as const, text: t })), weight: 1 },
  { arbitrary: fc.constant({ kind: 'raw' as const, text: 'x'.repeat(MAX_PAYLOAD + 1) }), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 40 }).map((bytes) => ({ kind: 'binary' as const, bytes })), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: CALLS_PER_RUN - 1 }).map((k) => ({ kind: 'stop' as const, k })), weight: 1 },
);

function resolveRefs(value: unknown, ids: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, ids));
  if (typeof value === 'object' && value !== null) {
    const ref = (value as { ref?: unknown }).ref;
    if (typeof ref === 'number' && Object.keys(value).length === 1) return ids[ref];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, ids)]));
  }
  return value;
}

const ALLOWED_SYNTHETIC = new Set([69, 76, 124, 130]);

/** Every call settled once (within a bound), alpha's pending map is gone or empty, no handler threw. */
async function expectAllSettled(calls: { pending: Promise<RoutedCapture | undefined>; settled: number }[]): Promise<void> {
  const captures = await Promise.race([
    Promise.all(calls.map((c) => c.pending)),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('a call never settled')), 5_000)),
  ]);
  for (const capture of captures) {
    expect(capture).toBeDefined();
    const { exitCode, stderr } = capture!;
    expect(Number.isInteger(exitCode) && exitCode >= 0 && exitCode <= 255).toBe(true);
    // A capture toolwire made (not the host's own result) names its cause on the last stderr line.
    if (ALLOWED_SYNTHETIC.has(exitCode) && text(stderr).startsWith('toolwire: ')) expect(text(stderr)).toMatch(/\n$/);
  }
  for (const c of calls) expect(c.settled).toBe(1);
  await waitFor(() => (started.server.router.hosts().find((h) => h.name === 'alpha')?.inFlight ?? 0) === 0, 'alpha to have no pending call');
  expect(log.errors()).toEqual([]);
}

function issueCalls(): { pending: Promise<RoutedCapture | undefined>; settled: number; controller: AbortController }[] {
  return Array.from({ length: CALLS_PER_RUN }, (_, k) => {
    const controller = new AbortController();
    const entry = { pending: undefined as unknown as Promise<RoutedCapture | undefined>, settled: 0, controller };
    entry.pending = route('alpha__slow', `k${k}`, { signal: controller.signal, deadlineMs: 10_000 }).then((c) => {
      entry.settled++;
      return c;
    });
    return entry;
  });
}

describe('a live session under random frames', () => {
  afterEach(() => expect(log.errors()).toEqual([]));

  it('random text, JSON and binary frames (ws level): every call settles once, nothing stays pending, nothing throws', async () => {
    let frames = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 16 }), async (specs) => {
        const alpha = await drivenHost(started);
        const calls = issueCalls();
        await waitFor(() => alpha.calls.size === CALLS_PER_RUN, 'the call frames');
        const ids = [...alpha.calls.keys()];
        for (const s of specs) {
          if (alpha.ws.readyState !== WebSocket.OPEN) break;
          frames++;
          if (s.kind === 'json') alpha.ws.send(JSON.stringify(resolveRefs(s.value, ids)));
          else if (s.kind === 'raw') alpha.ws.send(s.text);
          else if (s.kind === 'binary') alpha.ws.send(s.bytes, { binary: true });
          else calls[s.k]!.controller.abort();
        }
        // Answer whatever is still pending, then leave: each call must settle exactly once either way.
        if (alpha.ws.readyState === WebSocket.OPEN) for (const id of ids) alpha.answer(id, 'final');
        const closed = alpha.ws.readyState === WebSocket.CLOSED ? Promise.resolve() : once(alpha.ws, 'close');
        alpha.ws.close();
        await closed;
        await expectAllSettled(calls);
      }),
      { numRuns: 250 },
    );
    expect(frames).toBeGreaterThan(1_000);
    // beta was never affected, and is still served.
    expect(started.server.router.hosts().find((h) => h.name === 'beta')?.inFlight).toBe(1);
  });

  it('random bytes and hand-built frames (random opcode, RSV, FIN, mask, length) over a raw socket: same guarantees', async () => {
    const frameArb = fc.oneof(
      {
        arbitrary: fc
          .record({
            opcode: fc.integer({ min: 0, max: 15 }),
            rsv: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 7 })),
            fin: fc.boolean(),
            mask: fc.oneof(fc.constant(true), fc.boolean()),
            payload: fc.oneof(
              fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
              fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
            ),
          })
          .map((f) => buildFrame(f)),
        weight: 6,
      },
      { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)), weight: 2 },
      {
        arbitrary: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((claimedLength) => buildFrame({ opcode: 1, claimedLength, payload: 'x' })),
        weight: 1,
      },
    );
    let frames = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(frameArb, { minLength: 1, maxLength: 12 }), async (bufs) => {
        const alpha = await rawSocketHost(started.url, await started.hostToken('alpha'));
        await rawSocketAdvertise(alpha, [SLOW]);
        const calls = issueCalls();
        await waitFor(
          () => alpha.frames.filter((f) => f.opcode === 1 && f.payload.includes('"call"')).length === CALLS_PER_RUN || alpha.socket.destroyed,
          'the call frames',
        );
        for (const b of bufs) {
          if (alpha.socket.destroyed) break;
          frames++;
          alpha.write(b);
        }
        alpha.socket.end();
        await Promise.race([once(alpha.socket, 'close'), alpha.closed]);
        alpha.socket.destroy();
        await expectAllSettled(calls);
      }),
      { numRuns: 200 },
    );
    expect(frames).toBeGreaterThan(500);
  });

  it('after all that, the server still serves a healthy host and beta’s untouched call', async () => {
    beta.answer(betaId, 'beta ok');
    expect(text((await betaCall)!.stdout)).toBe('beta ok');
    const alpha = await drivenHost(started);
    const frame = alpha.nextCall();
    const call = route('alpha__slow', 'healthy');
    alpha.answer((await frame).id as string, 'healthy');
    const capture = (await call)!;
    expect(capture.exitCode).toBe(0);
    expect(text(capture.stdout)).toBe('healthy');
    expect(log.errors()).toEqual([]);
  });
});
