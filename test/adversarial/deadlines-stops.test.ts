/**
 * Adversarial checks of the shared deadline timers (src/session/deadlines.ts) and the shared stop
 * listener (src/session/stop-watch.ts): real server on port 0, raw `ws` hosts that answer by hand.
 */
import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Capture } from '@toolwire/protocol';
import type { RoutedCall } from '@toolwire/server';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, closeAll, startServer } from '@toolwire/testing';
import { cleanup, text, waitFor } from '../helpers.js';
import { drivenHost, recordingLogger, SLOW } from './harness.js';

afterEach(async () => {
  await cleanup();
  await closeAll();
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A raw host on `started` that answers every call at once with stdout `x`. */
async function answeringHost(started: TestServer): Promise<void> {
  const host = await drivenHost(started);
  host.ws.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as { type: string; id: string };
    if (frame.type === 'call') host.answer(frame.id, 'x');
  });
}

let seq = 0;
function routed(started: TestServer, signal: AbortSignal, extra: Partial<RoutedCall> = {}): Promise<Capture> {
  const call: RoutedCall = { id: `c${seq++}`, name: 'alpha__slow', input: {}, workspace: '', agent: 'agent', signal, ...extra };
  return started.server.router.route(call) as Promise<Capture>;
}

describe('deadlines of many lengths', () => {
  it('random lengths 1..1500 ms (some shared, some answered early) each settle 124 at their deadline with a deadline cancel', async () => {
    const started = await startServer({ maxInFlightPerHost: 10_000 });
    const host = await drivenHost(started);
    const never = new AbortController();
    const lengths: number[] = [];
    for (let i = 0; i < 150; i++) lengths.push(1 + Math.floor(Math.random() * 1500));
    for (let i = 0; i < 50; i++) lengths.push(lengths[i]!); // shared lengths
    lengths.push(1, 1, 2, 2);
    const results = lengths.map((ms, i) => {
      const start = performance.now();
      return routed(started, never.signal, { deadlineMs: ms, input: { tag: i } }).then((capture) => ({ ms, capture, elapsed: performance.now() - start }));
    });
    // Answer a few calls right away: their lengths' queues empty and keep an unref'd timer.
    await waitFor(() => host.calls.size === lengths.length, 'every call frame');
    const answered = new Set<string>();
    for (const [id, frame] of host.calls) {
      const ms = frame.deadlineMs as number;
      if (ms > 1000 && answered.size < 20) {
        answered.add(id);
        host.answer(id, 'early');
      }
    }
    const settled = await Promise.all(results);
    let worstEarly = Infinity;
    let worstLate = -Infinity;
    let deadlines = 0;
    for (const { ms, capture, elapsed } of settled) {
      if (capture.exitCode === 0) {
        expect(text(capture.stdout)).toBe('early');
        continue;
      }
      deadlines++;
      expect(capture.exitCode).toBe(124);
      expect(text(capture.stderr)).toBe(`toolwire: deadline of ${ms} ms exceeded\n`);
      worstEarly = Math.min(worstEarly, elapsed - ms);
      worstLate = Math.max(worstLate, elapsed - ms);
    }
    expect(deadlines).toBe(lengths.length - answered.size);
    expect(worstEarly).toBeGreaterThanOrEqual(-1.5);
    expect(worstLate).toBeLessThan(100); // event-loop lag on a shared 2-core machine
    await waitFor(() => host.cancels.length === deadlines, 'a cancel per deadline');
    expect(host.cancels.every((c) => c.reason === 'deadline' && !answered.has(c.id as string))).toBe(true);
  });

  it('a result arriving around its deadline settles the call exactly once (0 or 124), never both', async () => {
    const { logger, errors } = recordingLogger();
    const started = await startServer({ logger, maxInFlightPerHost: 10_000 });
    const host = await drivenHost(started);
    const never = new AbortController();
    const runs = 200;
    const results: Promise<Capture>[] = [];
    const DEADLINE = 20;
    for (let i = 0; i < runs; i++) results.push(routed(started, never.signal, { deadlineMs: DEADLINE, input: { tag: i } }));
    await waitFor(() => host.calls.size === runs, 'every call frame');
    const ids = [...host.calls.keys()];
    // Answer in a spread around the deadline (timer started when the frame was sent).
    await new Promise<void>((resolve) => {
      let left = ids.length;
      ids.forEach((id, i) =>
        setTimeout(
          () => {
            host.answer(id, 'ok');
            if (--left === 0) resolve();
          },
          (i % 10) + DEADLINE - 8,
        ),
      );
    });
    const settled = await Promise.all(results);
    for (const capture of settled) expect([0, 124]).toContain(capture.exitCode);
    expect(errors()).toEqual([]);
  });

  it('a deadline of 2^31 − 1 ms neither fires early nor keeps a closed server alive; the call settles 69 at close', async () => {
    const started = await startServer();
    await drivenHost(started);
    const never = new AbortController();
    const pending = routed(started, never.signal, { deadlineMs: 2 ** 31 - 1 });
    const one = await routed(started, never.signal, { deadlineMs: 1 });
    expect(one.exitCode).toBe(124);
    await started.server.close();
    const capture = await pending;
    expect(capture.exitCode).toBe(69);
  });
});

describe('no timer outlives the server', () => {
  const refTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it("after close, no ref'd timer is left from emptied lengths, pending deadlines, stopped calls in grace or a 2^31 − 1 deadline", async () => {
    const before = refTimers();
    const started = await startServer({ maxInFlightPerHost: 10_000, cancelGraceMs: 60_000, heartbeatMs: 60_000 });
    const host = await drivenHost(started);
    const never = new AbortController();
    const stop = new AbortController();
    const pending: Promise<Capture>[] = [];
    for (let i = 0; i < 40; i++) pending.push(routed(started, never.signal, { deadlineMs: 10_000 + i * 37, input: { tag: `a${i}` } }));
    for (let i = 0; i < 10; i++) pending.push(routed(started, stop.signal, { deadlineMs: 20_000 + i, input: { tag: `s${i}` } }));
    pending.push(routed(started, never.signal, { deadlineMs: 2 ** 31 - 1, input: { tag: 'max' } }));
    await waitFor(() => host.calls.size === 51, 'call frames');
    // Answer half of the first group: their lengths keep an unref'd timer.
    for (const [id, frame] of host.calls) if (/^a\d*[02468]$/.test(String((frame.input as { tag: string }).tag))) host.answer(id, 'ok');
    stop.abort();
    await waitFor(() => host.cancels.length === 10, 'stop cancels');
    expect(refTimers()).toBeGreaterThan(before); // the check below can see them
    await started.server.close();
    const captures = await Promise.all(pending);
    expect(captures.filter((c) => c.exitCode === 0).length).toBe(20);
    expect(captures.filter((c) => c.exitCode === 130).length).toBe(10);
    expect(captures.filter((c) => c.exitCode === 69).length).toBe(21);
    await waitFor(() => refTimers() <= before, `ref'd timers back to ${before}`, 2_000);
  });
});

describe('stops through the shared abort listener', () => {
  it('calls on two sessions sharing one signal both stop: cancel stop, then 130 with partial output or at the grace', async () => {
    const started = await startServer({ cancelGraceMs: 300 });
    const a = await drivenHost(started);
    const b = await drivenHost(started, [{ ...SLOW, name: 'slow' }], 'beta');
    const run = new AbortController();
    const onA = routed(started, run.signal);
    const onB = routed(started, run.signal, { name: 'beta__slow' });
    await waitFor(() => a.calls.size === 1 && b.calls.size === 1, 'both call frames');
    expect(getEventListeners(run.signal, 'abort').length).toBe(1);
    const stoppedAt = performance.now();
    run.abort();
    await waitFor(() => a.cancels.length === 1 && b.cancels.length === 1, 'both cancels');
    expect(a.cancels[0]!.reason).toBe('stop');
    expect(b.cancels[0]!.reason).toBe('stop');
    a.answer([...a.calls.keys()][0]!, 'partial', 143);
    const ca = await onA;
    expect(ca.exitCode).toBe(130);
    expect(text(ca.stdout)).toBe('partial');
    const cb = await onB;
    expect(cb.exitCode).toBe(130);
    expect(performance.now() - stoppedAt).toBeGreaterThanOrEqual(299);
  });

  it('a long-lived signal reused for 5000 calls keeps one abort listener, and still stops a later call', async () => {
    const started = await startServer({ maxInFlightPerHost: 10_000, cancelGraceMs: 50 });
    const host = await drivenHost(started);
    host.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; id: string; input?: { tag?: unknown } };
      if (frame.type === 'call' && frame.input?.tag !== 'last') host.answer(frame.id, 'x');
    });
    const run = new AbortController();
    for (let batch = 0; batch < 50; batch++) {
      const all = Array.from({ length: 100 }, () => routed(started, run.signal));
      for (const capture of await Promise.all(all)) expect(capture.exitCode).toBe(0);
    }
    expect(getEventListeners(run.signal, 'abort').length).toBe(1);
    const last = routed(started, run.signal, { input: { tag: 'last' } });
    await waitFor(() => [...host.calls.values()].some((f) => (f.input as { tag?: unknown }).tag === 'last'), 'last call frame');
    run.abort();
    expect((await last).exitCode).toBe(130);
  });

  it('per-call AbortControllers are garbage once their calls settle', async () => {
    const started = await startServer({ maxInFlightPerHost: 10_000 });
    await answeringHost(started);
    const refs: WeakRef<AbortSignal>[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const all = Array.from({ length: 100 }, () => {
        const signal = new AbortController().signal;
        refs.push(new WeakRef(signal));
        return routed(started, signal);
      });
      await Promise.all(all);
    }
    await collectGarbage();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBe(0);
  });

  // Found in review (fixed): a listener left on the signal after its calls settle pins every
  // composite signal (AbortSignal.any / AbortSignal.timeout): Node keeps such a signal strongly
  // reachable while it has an `abort` listener (lib/internal/abort_controller.js
  // `gcPersistentSignals`). The executor builds `AbortSignal.any([req.signal, controller.signal])`
  // for every call that carries a signal (every MCP call); stop-watch.ts now lets a signal go one
  // loop turn after its last call settled.
  it('composite per-call signals from executor.execute({ signal }) are garbage once their calls settle', async () => {
    const started = await startServer({ maxInFlightPerHost: 10_000 });
    await answeringHost(started);
    const refs: WeakRef<AbortSignal>[] = [];
    const router = started.server.router;
    const route = router.route.bind(router);
    router.route = (call: RoutedCall) => {
      refs.push(new WeakRef(call.signal));
      return route(call);
    };
    const agentRun = new AbortController(); // one long-lived stop signal for a whole agent run
    for (let batch = 0; batch < 10; batch++) {
      const all = Array.from({ length: 100 }, () => started.server.executor.execute({ name: 'alpha__slow', input: {}, agent: 'agent', signal: agentRun.signal }));
      for (const result of await Promise.all(all)) expect(result.outcome).toBe('completed');
    }
    expect(refs.length).toBe(1000);
    await collectGarbage();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBe(0);
  });

  // The executor's calls are watched through their stop scope (call-signals.ts), not through
  // `call.signal`; the signal an embedder's router would read must still abort with them.
  it("executed calls stop on a host by their caller's signal and by executor.stop (cancel stop, 130), and call.signal aborts too", async () => {
    const started = await startServer({ cancelGraceMs: 50 });
    const host = await drivenHost(started);
    const signals: AbortSignal[] = [];
    const router = started.server.router;
    const route = router.route.bind(router);
    router.route = (call: RoutedCall) => {
      signals.push(call.signal);
      return route(call);
    };
    const executor = started.server.executor;
    const run = new AbortController();
    const byCaller = executor.execute({ name: 'alpha__slow', input: { tag: 'caller' }, agent: 'a', signal: run.signal });
    await host.nextCall('caller');
    run.abort();
    const stopped = await byCaller;
    expect(stopped.outcome === 'completed' && stopped.capture.exitCode).toBe(130);
    expect(host.cancels.map((c) => c.reason)).toEqual(['stop']);
    const withSignal = executor.execute({ name: 'alpha__slow', input: { tag: 'linked' }, agent: 'b', signal: new AbortController().signal });
    const without = executor.execute({ name: 'alpha__slow', input: { tag: 'bare' }, agent: 'b' });
    await Promise.all([host.nextCall('linked'), host.nextCall('bare')]);
    expect(executor.stop('b')).toBe(2);
    for (const result of await Promise.all([withSignal, without])) expect(result.outcome === 'completed' && result.capture.exitCode).toBe(130);
    expect(host.cancels.map((c) => c.reason)).toEqual(['stop', 'stop', 'stop']);
    expect(signals.map((signal) => signal.aborted)).toEqual([true, true, true]);
  });

  // Found in review (fixed; the old per-call listener had the same window): a signal aborted after
  // route()'s check but before dispatch watches it (here by the input's toJSON, run by
  // encodeMessage) gets a listener that can never fire; dispatch now checks the signal again.
  it('a signal aborted between route() checks and dispatch still stops the call (130, cancel stop)', async () => {
    const started = await startServer({ cancelGraceMs: 50 });
    const host = await drivenHost(started);
    const run = new AbortController();
    const input = { toJSON: () => (run.abort(), {}) };
    const capture = await routed(started, run.signal, { input, deadlineMs: 1000 });
    expect(host.cancels.map((c) => c.reason)).toEqual(['stop']);
    expect(capture.exitCode).toBe(130);
  });
});

describe('route() never throws or rejects', () => {
  // Found in review (fixed; the old async route() rejected here instead): the catch block read
  // `call?.name` again, so a call whose `name` getter throws escaped route() as a synchronous throw.
  it('a call whose name getter throws resolves 70 instead of throwing', async () => {
    const started = await startServer();
    const call = {
      get name(): string {
        throw new Error('bad name');
      },
      id: 'x',
      input: {},
      workspace: '',
      agent: 'agent',
      signal: new AbortController().signal,
    } as RoutedCall;
    let result: Promise<unknown> | undefined;
    expect(() => (result = started.server.router.route(call))).not.toThrow();
    expect(((await result) as Capture).exitCode).toBe(70);
  });
});

describe('frames', () => {
  it('a base64 result with non-base64 stdout settles 76; plain stdout that looks like anything passes', async () => {
    const started = await startServer();
    const host = await drivenHost(started);
    const never = new AbortController();
    const send = (frame: Record<string, unknown>) => host.ws.send(JSON.stringify({ type: 'result', stderr: '', exitCode: 0, ...frame }));

    const plain = routed(started, never.signal, { input: { tag: 'plain' } });
    const p = await host.nextCall('plain');
    send({ id: p.id, stdout: 'not base64 !! ===\n' });
    expect(text((await plain).stdout)).toBe('not base64 !! ===\n');

    const bad = routed(started, never.signal, { input: { tag: 'bad' } });
    const b = await host.nextCall('bad');
    send({ id: b.id, stdout: 'aGk=\n', stdoutEncoding: 'base64' });
    expect((await bad).exitCode).toBe(76);

    const badErr = routed(started, never.signal, { input: { tag: 'badErr' } });
    const be = await host.nextCall('badErr');
    send({ id: be.id, stdout: 'plain ✓', stderr: '%%%', stderrEncoding: 'base64' });
    expect((await badErr).exitCode).toBe(76);

    const good = routed(started, never.signal, { input: { tag: 'good' } });
    const g = await host.nextCall('good');
    send({ id: g.id, stdout: 'aGk=', stdoutEncoding: 'base64', stderr: '{"x":1}' });
    const gc0 = await good;
    expect(gc0.exitCode).toBe(0);
    expect(text(gc0.stdout)).toBe('hi');
    expect(text(gc0.stderr)).toBe('{"x":1}');
  });

  it('a burst of call frames (small and over 16 KiB, mixed) written in one tick arrives complete and in order', async () => {
    const started = await startServer({ maxInFlightPerHost: 10_000 });
    const host = await drivenHost(started);
    const order: number[] = [];
    host.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; id: string; input: { n: number; pad: string } };
      if (frame.type !== 'call') return;
      order.push(frame.input.n);
      host.answer(frame.id, String(frame.input.n));
    });
    const never = new AbortController();
    const N = 300;
    const all: Promise<Capture>[] = [];
    for (let n = 0; n < N; n++) {
      const pad = n % 7 === 0 ? 'x'.repeat(20_000) : n % 5 === 0 ? 'y'.repeat(16 * 1024 - 10) : '';
      all.push(routed(started, never.signal, { input: { n, pad } }));
    }
    const captures = await Promise.all(all);
    expect(order).toEqual(Array.from({ length: N }, (_, n) => n));
    captures.forEach((c, n) => expect(text(c.stdout)).toBe(String(n)));
  });
});
