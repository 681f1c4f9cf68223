/**
 * The executor's stop signals (executor/call-signals.ts): no controller or `AbortSignal.any()` per
 * call, and nothing of a settled call left reachable, whatever signal the caller passes.
 */
import { getEventListeners } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Capture, failureCapture, utf8 } from '@toolwire/protocol';
import { describe, expect, it } from 'vitest';
import { RENEW_AFTER_ADDS } from '../src/churn.js';
import { CallSignals } from '../src/executor/call-signals.js';
import { Executor } from '../src/executor/executor.js';
import type { ExecuteResult } from '../src/executor/request.js';
import { resolveServerConfig } from '../src/config.js';
import type { RoutedCall } from '../src/seam.js';
import { FakeInjection } from './fake-injection.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ok: Capture = { stdout: utf8('{}'), stderr: new Uint8Array(0), exitCode: 0 };

function setup(): { injection: FakeInjection; executor: Executor; held: RoutedCall[] } {
  const injection = new FakeInjection();
  injection.list = [
    { name: 'echo', inputSchema: { type: 'object' } },
    { name: 'hold', inputSchema: { type: 'object' } },
  ];
  injection.handlers.set('echo', () => Promise.resolve(ok));
  const held: RoutedCall[] = [];
  // Waits for its signal, as the router does for a call in flight, and answers 130.
  injection.handlers.set(
    'hold',
    (call) =>
      new Promise((resolve) => {
        held.push(call);
        call.signal.addEventListener('abort', () => resolve(failureCapture('cancelled', 'stopped')), { once: true });
      }),
  );
  const executor = new Executor({ injection, options: resolveServerConfig({}).executor });
  return { injection, executor, held };
}

function exitCode(result: ExecuteResult): number | undefined {
  return result.outcome === 'completed' ? result.capture.exitCode : undefined;
}

/** Heap after full collections, bytes. */
async function settledHeap(): Promise<number> {
  await nextTurn(); // idle links leave their signals one turn after their last call
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('executor stop signals', () => {
  it('keeps no memory of 100,000 settled calls that carried one long-lived signal', async () => {
    const { injection, executor } = setup();
    injection.routed.push = () => 0; // the fake records calls; not here
    const signal = new AbortController().signal;
    const call = { name: 'echo', input: {}, agent: 'a', signal };
    for (let i = 0; i < 1_000; i++) await executor.execute(call); // warm: lazy state, JIT
    const before = await settledHeap();
    // 16 in flight at a time, as concurrent workers sharing one signal would be
    for (let i = 0; i < 100_000 / 16; i++) await Promise.all(Array.from({ length: 16 }, () => executor.execute(call)));
    const after = await settledHeap();
    expect(after - before).toBeLessThan(1024 * 1024); // < ~10 bytes per call; the old per-call any() kept 50–80
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(executor.inFlight).toBe(0);
  });

  it('keeps no memory of settled calls that each carried a fresh signal, or none', async () => {
    const { injection, executor } = setup();
    injection.routed.push = () => 0;
    for (let i = 0; i < 1_000; i++) await executor.execute({ name: 'echo', input: {}, agent: 'a', signal: new AbortController().signal });
    const before = await settledHeap();
    for (let i = 0; i < 50_000; i++) {
      await executor.execute({ name: 'echo', input: {}, agent: 'a', signal: new AbortController().signal });
      await executor.execute({ name: 'echo', input: {}, agent: 'a' });
    }
    const after = await settledHeap();
    expect(after - before).toBeLessThan(1024 * 1024);
  });

  it('stops calls that carry a caller signal, and routes the next call with that signal normally', async () => {
    const { executor, held } = setup();
    const signal = new AbortController().signal;
    const calls = [executor.execute({ name: 'hold', input: {}, agent: 'a', signal }), executor.execute({ name: 'hold', input: {}, agent: 'a' })];
    await expect.poll(() => held.length).toBe(2);
    expect(executor.stop('a')).toBe(2);
    expect(executor.stop('a')).toBe(0); // already stopped: not counted again
    expect((await Promise.all(calls)).map(exitCode)).toEqual([130, 130]);
    expect(signal.aborted).toBe(false); // the caller's signal is the caller's
    expect(exitCode(await executor.execute({ name: 'echo', input: {}, agent: 'a', signal }))).toBe(0);
  });

  it('a caller signal stops only the calls that carry it', async () => {
    const { executor, held } = setup();
    const mine = new AbortController();
    const a1 = executor.execute({ name: 'hold', input: {}, agent: 'a', signal: mine.signal });
    const a2 = executor.execute({ name: 'hold', input: {}, agent: 'a', signal: new AbortController().signal });
    const b1 = executor.execute({ name: 'hold', input: {}, agent: 'b', signal: mine.signal });
    await expect.poll(() => held.length).toBe(3);
    mine.abort();
    expect(exitCode(await a1)).toBe(130);
    expect(exitCode(await b1)).toBe(130);
    expect(held[1]!.signal.aborted).toBe(false);
    expect(executor.inFlight).toBe(1);
    expect(executor.stop('a')).toBe(1);
    expect(exitCode(await a2)).toBe(130);
    // Aborted for good: a later call with it is stopped before routing.
    const late = await executor.execute({ name: 'echo', input: {}, agent: 'a', signal: mine.signal });
    expect(exitCode(late)).toBe(130);
    expect(late.outcome === 'completed' && Buffer.from(late.capture.stderr).toString()).toBe('toolwire: call stopped before it was routed\n');
  });

  it('stop(agent) leaves the calls of other agents sharing the same caller signal running', async () => {
    const { executor, held } = setup();
    const shared = new AbortController().signal;
    const a = executor.execute({ name: 'hold', input: {}, agent: 'a', signal: shared });
    const b = executor.execute({ name: 'hold', input: {}, agent: 'b', signal: shared });
    await expect.poll(() => held.length).toBe(2);
    expect(executor.stop('a')).toBe(1);
    expect(exitCode(await a)).toBe(130);
    expect(held[1]!.signal.aborted).toBe(false);
    expect(executor.stop()).toBe(1);
    expect(exitCode(await b)).toBe(130);
    await executor.whenIdle();
  });

  it('leaves no listener on the caller signal once its calls settled', async () => {
    const { executor } = setup();
    const signal = new AbortController().signal;
    await Promise.all([executor.execute({ name: 'echo', input: {}, agent: 'a', signal }), executor.execute({ name: 'echo', input: {}, agent: 'b', signal })]);
    await nextTurn();
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('stops exactly the calls still watched by a scope after its watch set was renewed many times', () => {
    for (const signal of [undefined, new AbortController().signal]) {
      const signals = new CallSignals();
      const scope = signals.enter('a', signal);
      const stopped: number[] = [];
      const calls = Array.from({ length: RENEW_AFTER_ADDS * 5 + 3 }, (_, i) => ({ stop: () => stopped.push(i) }));
      for (const [i, call] of calls.entries()) {
        scope.watch(call);
        if (i % 3 === 0) scope.unwatch(call); // settled before the stop
      }
      expect(signals.stop('a')).toBe(1);
      expect(stopped).toEqual(calls.map((_, i) => i).filter((i) => i % 3 !== 0));
    }
  });
});
