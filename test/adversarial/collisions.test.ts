/**
 * Issue 3 §4 — calls dispatched at once under a forced wire-id collision, through the
 * `ServerSeams.newCallId` test seam (the server mints wire ids; by default nanoid never collides).
 * A pending id is never given to a second call, so one result can never settle two calls: the
 * session draws again, and after 8 colliding draws settles the newer call 70 at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, text } from '../helpers.js';
import { waitFor } from './harness.js';
import { ITERATIONS, expectQuiet, inLanes, rigWithSeams, routeTagged } from './race-rig.js';

afterEach(cleanup);

describe('forced wire-id collisions (ServerSeams.newCallId test seam)', () => {
  it('two calls dispatched in the same tick with a colliding id: the second draws again, and one result never settles two calls', async () => {
    const ids = ['dup', 'dup', 'fresh'];
    const r = await rigWithSeams({ newCallId: () => ids.shift() ?? 'spare' });
    const a = routeTagged(r.started, 'a');
    const b = routeTagged(r.started, 'b');
    await waitFor(() => r.host.calls.size === 2, 'two call frames');
    expect([...r.host.calls.keys()]).toEqual(['dup', 'fresh']);
    r.host.answer('dup', 'out-a');
    expect(text((await a.pending).stdout)).toBe('out-a');
    expect(r.started.server.router.hosts()[0]!.inFlight).toBe(1); // b is still pending
    r.host.answer('dup', 'out-a again'); // the late copy is dropped, b untouched
    r.host.answer('fresh', 'out-b');
    expect(text((await b.pending).stdout)).toBe('out-b');
    expect(a.settled.count + b.settled.count).toBe(2);
    await expectQuiet(r);
  });

  it('a generator that always collides settles the newer call 70 at once and leaves the pending one intact', async () => {
    const r = await rigWithSeams({ newCallId: () => 'same' });
    const first = routeTagged(r.started, 'first');
    const second = routeTagged(r.started, 'second');
    const refused = await second.pending;
    expect(refused.exitCode).toBe(70);
    expect(text(refused.stderr)).toMatch(/toolwire: could not mint a call id unique among 1 pending calls\n$/);
    await waitFor(() => r.host.calls.size === 1, 'one call frame');
    r.host.answer('same', 'out-first');
    expect(text((await first.pending).stdout)).toBe('out-first');
    await expectQuiet(r);
  });

  it('1000 concurrent calls drawing from a pool of 3 ids each settle once, with their own output or 70', async () => {
    const pool = ['0', 'x', 'y'];
    let draws = 0;
    const r = await rigWithSeams({ newCallId: () => pool[draws++ % pool.length]! });
    const outcomes = { own: 0, refused: 0 };
    const runs: { settled: { count: number } }[] = [];
    await inLanes(ITERATIONS, 8, async (n) => {
      const tag = `pool-${n}`;
      const frame = r.host.nextCall(tag);
      const call = routeTagged(r.started, tag);
      runs.push(call);
      const first = await Promise.race([frame.then((f) => f.id as string), call.pending.then(() => undefined)]);
      if (first !== undefined) r.host.answer(first, `out-${tag}`);
      const capture = await call.pending;
      if (capture.exitCode === 70) outcomes.refused++;
      else {
        expect(capture.exitCode).toBe(0);
        expect(text(capture.stdout)).toBe(`out-${tag}`);
        outcomes.own++;
      }
    });
    expect(runs.every((c) => c.settled.count === 1)).toBe(true);
    expect(outcomes.own + outcomes.refused).toBe(ITERATIONS);
    expect(outcomes.own).toBeGreaterThan(0);
    await expectQuiet(r);
  });
});
