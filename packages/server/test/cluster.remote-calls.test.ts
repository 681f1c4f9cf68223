/**
 * The caller's side of calls across nodes (cluster/remote-calls.ts): the backstop that settles a
 * call 124 when the host's node does not answer within the call's deadline and the grace, and the
 * answers' bytes, which the caller gets as copies of its own (not views of the NATS read buffer).
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { encodeCapture, encodeOutput } from '../src/cluster/answer.js';
import { Batcher, unbatch } from '../src/cluster/batch.js';
import type { Bus, BusHandler } from '../src/cluster/bus.js';
import { subjects } from '../src/cluster/options.js';
import { RemoteCalls } from '../src/cluster/remote-calls.js';
import type { Logger } from '../src/options.js';
import type { RoutedCall } from '../src/seam.js';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } as never;

/** A connected bus on which no node ever answers (calls are published and dropped). */
const silentBus: Bus = {
  connected: true,
  maxPayload: 1024 * 1024,
  publish: () => undefined,
  subscribe: () => () => undefined,
  request: () => Promise.reject(new Error('not used')),
};

function remoteCalls(graceMs: number, bus: Bus = silentBus, maxAnswerBytes = 1024 * 1024): RemoteCalls {
  return new RemoteCalls({
    bus,
    batcher: new Batcher(bus),
    subjects: subjects('test'),
    node: 'b',
    deadlineMs: 60_000,
    graceMs,
    capBytes: 1024,
    maxAnswerBytes,
    logger: quiet,
  });
}

/** A bus that hands over the handlers and the calls published, as `answerWith` needs them. */
function answeringBus(): { bus: Bus; handlers: Map<string, BusHandler>; sent: { id: number; reply: string }[] } {
  const handlers = new Map<string, BusHandler>();
  const sent: { id: number; reply: string }[] = [];
  const bus: Bus = {
    ...silentBus,
    subscribe: (subject, handler) => {
      handlers.set(subject, handler);
      return () => handlers.delete(subject);
    },
    publish: (_subject, data, reply) => {
      unbatch(data, (id) => sent.push({ id, reply: reply! }));
    },
  };
  return { bus, handlers, sent };
}

const call = (id: string, deadlineMs: number): RoutedCall => ({
  id,
  name: 'alpha__echo',
  input: {},
  workspace: '',
  agent: 'agent',
  signal: new AbortController().signal,
  deadlineMs,
});

describe('calls to a host on another node', () => {
  it('settle 124 at their deadline plus the grace when that node never answers, shorter lengths first', async () => {
    const calls = remoteCalls(20);
    const start = performance.now();
    const settled: [string, number, number][] = [];
    const track = (id: string, deadlineMs: number) =>
      calls.call('a', 'alpha', 'echo', call(id, deadlineMs)).then((c) => {
        settled.push([id, c.exitCode, performance.now() - start]);
        return c;
      });
    const slow = track('slow', 150);
    const first = track('first', 40);
    const second = track('second', 40);
    const captures = await Promise.all([slow, first, second]);
    expect(settled.map(([id, code]) => [id, code])).toEqual([
      ['first', 124],
      ['second', 124],
      ['slow', 124],
    ]);
    // Not before deadline + grace (less the 1 ms a timer of its own may fire early), and not much after.
    const at = Object.fromEntries(settled.map(([id, , ms]) => [id, ms]));
    expect(at.first).toBeGreaterThanOrEqual(40 + 20 - 1);
    expect(at.slow).toBeGreaterThanOrEqual(150 + 20 - 1);
    expect(at.slow).toBeLessThan(150 + 20 + 1_000);
    expect(Buffer.from(captures[0].stderr).toString()).toBe('toolwire: deadline of 150 ms exceeded (node a did not answer in time)\n');
    calls.close();
  });
});

describe('a call with a deadline near or past the longest timer (2^31 − 1 ms)', () => {
  it('waits as on one node (its backstop clamped to 2^31 − 1 ms): no timer re-armed every millisecond, no TimeoutOverflowWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const calls = remoteCalls(4_000);
      let settled = false;
      const pending = [2_147_483_647, 10_000_000_000].map((ms) => calls.call('a', 'alpha', 'echo', call(`long-${ms}`, ms)).then((c) => ((settled = true), c)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setImmediate(resolve)); // a 'warning' is emitted on the next tick
      expect(settled).toBe(false);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
      calls.close();
      for (const capture of await Promise.all(pending)) expect(capture.exitCode).toBe(69);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('a call whose input JSON cannot encode', () => {
  it('settles 65 at once with the reason, sends nothing and leaves nothing pending', async () => {
    const published: unknown[] = [];
    const bus: Bus = { ...silentBus, publish: (...args: unknown[]) => void published.push(args) };
    const calls = remoteCalls(20, bus);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const input of [cyclic, { n: 1n }]) {
      const capture = await calls.call('a', 'alpha', 'echo', { ...call('bad', 1_000), input });
      expect(capture.exitCode).toBe(65);
      expect(Buffer.from(capture.stderr).toString()).toMatch(/^toolwire: input cannot be encoded as JSON: /);
    }
    await new Promise((resolve) => setImmediate(resolve)); // a batch would have been published by now
    expect(published).toEqual([]);
    calls.close();
  });
});

describe("answers from the host's node", () => {
  it('reach the caller as bytes of their own, not views that keep the whole NATS read buffer alive', async () => {
    const { bus, handlers, sent } = answeringBus();
    const calls = remoteCalls(1_000, bus);
    const chunks: Uint8Array[] = [];
    const pending = calls.call('a', 'alpha', 'echo', { ...call('c1', 10_000), onOutput: (chunk) => void chunks.push(chunk.bytes) });
    await Promise.resolve(); // the batch with the call goes out at the end of the turn
    expect(sent).toHaveLength(1);
    const { id, reply } = sent[0]!;
    // The answers as a socket read delivers them: one large buffer, the messages views into it.
    const answers = [
      encodeOutput('stdout', 0, Buffer.from('live\n')),
      ...encodeCapture({ stdout: Buffer.from('live\ndone\n'), stderr: new Uint8Array(0), exitCode: 0 }, 1 << 20),
    ];
    const read = Buffer.alloc(64 * 1024);
    for (const [k, answer] of answers.entries()) {
      const at = 100 + k * 1000;
      read.writeUIntBE(id, at, 6);
      read.writeUInt32BE(answer.length, at + 6);
      read.set(answer, at + 10);
      handlers.get(reply)!(read.subarray(at, at + 10 + answer.length), undefined, reply);
    }
    const capture = await pending;
    expect(Buffer.from(capture.stdout).toString()).toBe('live\ndone\n');
    expect(Buffer.from(chunks[0]!).toString()).toBe('live\n');
    for (const bytes of [capture.stdout, chunks[0]!]) expect(bytes.buffer).not.toBe(read.buffer);
    calls.close();
  });
});

describe('an answer larger than maxPayload (a node with the NATS credentials sending parts without end)', () => {
  it('settles the call 76 with the reason once its parts pass the limit, and drops the rest', async () => {
    const { bus, handlers, sent } = answeringBus();
    const calls = remoteCalls(1_000, bus, 1_000);
    const send = (data: Uint8Array): void => {
      const item = Buffer.alloc(10 + data.length);
      item.writeUIntBE(sent[0]!.id, 0, 6);
      item.writeUInt32BE(data.length, 6);
      item.set(data, 10);
      handlers.get(sent[0]!.reply)!(item, undefined, sent[0]!.reply);
    };
    // Within the limit, in parts: assembled whole.
    const fits = calls.call('a', 'alpha', 'echo', call('fits', 10_000));
    await Promise.resolve();
    for (const answer of encodeCapture({ stdout: Buffer.alloc(900, 0x61), stderr: new Uint8Array(0), exitCode: 0 }, 300)) send(answer);
    expect((await fits).stdout.length).toBe(900);
    sent.length = 0;
    // Over it: 76 at the part that passes it.
    const over = calls.call('a', 'alpha', 'echo', call('over', 10_000));
    await Promise.resolve();
    const parts = encodeCapture({ stdout: Buffer.alloc(5_000, 0x61), stderr: new Uint8Array(0), exitCode: 0 }, 300);
    for (const answer of parts.slice(0, -1)) send(answer);
    const capture = await over;
    expect(capture.exitCode).toBe(76);
    expect(Buffer.from(capture.stderr).toString()).toBe('toolwire: the answer of node a is larger than 1000 bytes (maxPayload)\n');
    send(parts.at(-1)!); // the end of a settled call: dropped
    calls.close();
  });
});
