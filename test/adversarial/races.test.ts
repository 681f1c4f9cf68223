/**
 * Issue 3 §4 — races. An in-process server and a raw `ws` host answering by hand, so each race runs
 * 1000 times in well under a second: stop vs result (same tick on the server, same tick on the
 * host, 0–2 ms apart), stop vs the host going away, deadline vs result, a result arriving twice,
 * results for unknown/foreign ids and for id "0" (forced wire-id collisions: collisions.test.ts).
 * Every call settles exactly once, with its own output, the pending maps end empty, and no handler
 * throws (no error-level log).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, text } from '../helpers.js';
import { drivenHost, serverSideOf, trackServerSockets, waitFor } from './harness.js';
import { ITERATIONS, delay, expectOwnOr130, expectQuiet, inLanes, rig, routeTagged } from './race-rig.js';

afterEach(cleanup);

describe('stop racing the result', () => {
  it('stop in the same server tick as the result frame, just before or just after it is parsed, settles each call once (1000 each)', async () => {
    const sockets = trackServerSockets();
    const r = await rig();
    const port = (r.host.ws as unknown as { _socket: { localPort: number } })._socket.localPort;
    const serverSide = (await waitFor(() => serverSideOf(sockets, port), 'the server side of the host socket')).socket;
    // One lane: while armed, the only bytes the host sends are the result frame of the armed call.
    let armed: { controller: AbortController; phase: 'before' | 'after' } | undefined;
    serverSide.prependListener('data', () => {
      if (armed?.phase === 'before') armed.controller.abort();
    });
    serverSide.on('data', () => {
      if (armed?.phase === 'after') armed.controller.abort();
    });
    const outcomes = { before: { result: 0, stop: 0 }, after: { result: 0, stop: 0 } };
    for (const phase of ['before', 'after'] as const) {
      for (let i = 0; i < ITERATIONS; i++) {
        const tag = `${phase}-${i}`;
        const frame = r.host.nextCall(tag);
        const { pending, controller, settled } = routeTagged(r.started, tag);
        const { id } = await frame;
        armed = { controller, phase };
        r.host.answer(id as string, `out-${tag}`);
        const capture = await pending;
        armed = undefined;
        outcomes[phase][expectOwnOr130(capture, tag)]++;
        expect(settled.count).toBe(1);
      }
    }
    // Aborted before ws parsed the result: the stop wins and keeps the output; after: the result won.
    expect(outcomes.before).toEqual({ result: 0, stop: ITERATIONS });
    expect(outcomes.after).toEqual({ result: ITERATIONS, stop: 0 });
    await expectQuiet(r);
  });

  it('stop in the same tick as the host sends its result, and 0–2 ms before or after it, settles each call once (1000 each)', async () => {
    const r = await rig();
    const offsets = [-2, -1, 0, 1, 2];
    const seen = new Map<number, { result: number; stop: number }>(offsets.map((o) => [o, { result: 0, stop: 0 }]));
    const runs: { settled: { count: number } }[] = [];
    await inLanes(offsets.length * ITERATIONS, 20, async (n) => {
      const offset = offsets[n % offsets.length]!;
      const tag = `jit-${n}`;
      const frame = r.host.nextCall(tag);
      const call = routeTagged(r.started, tag);
      runs.push(call);
      const id = (await frame).id as string;
      if (offset < 0) {
        call.controller.abort();
        await delay(-offset);
        r.host.answer(id, `out-${tag}`);
      } else if (offset === 0) {
        r.host.answer(id, `out-${tag}`);
        call.controller.abort();
      } else {
        r.host.answer(id, `out-${tag}`);
        await delay(offset);
        call.controller.abort();
      }
      seen.get(offset)![expectOwnOr130(await call.pending, tag)]++;
    });
    expect(runs.every((c) => c.settled.count === 1)).toBe(true);
    // A stop the server reads before the result always wins (the result becomes partial output).
    expect(seen.get(-2)!.stop + seen.get(-1)!.stop + seen.get(0)!.stop).toBe(3 * ITERATIONS);
    await expectQuiet(r);
  });
});

describe('stop racing the host going away', () => {
  it('a stopped call whose host disconnects within the cancel grace settles 130 (the stop stands), never twice', async () => {
    const r = await rig();
    const frame = r.host.nextCall('gone');
    const call = routeTagged(r.started, 'gone');
    await frame;
    const cancel = new Promise<void>((resolve) => r.host.ws.on('message', (d: Buffer) => JSON.parse(d.toString()).type === 'cancel' && resolve()));
    call.controller.abort();
    await cancel;
    r.host.ws.terminate();
    const capture = await call.pending;
    expect(capture).toMatchObject({ exitCode: 130, failure: 'cancelled' });
    expect(text(capture.stderr)).toMatch(/^toolwire: cancelled by stop; host alpha disconnected \(close 1006 ABNORMAL_CLOSURE\)\n$/);
    expect(call.settled.count).toBe(1);
  });

  it('stop and a host disconnect 0–2 ms apart (200 connections, one after another): each call settles once, 130 or 69', async () => {
    const r = await rig({ maxConnectionsPerHost: 64 });
    const offsets = [-2, -1, 0, 1, 2];
    const seen = { 130: 0, 69: 0 };
    await inLanes(200, 1, async (n) => {
      const host = await drivenHost(r.started);
      const offset = offsets[n % offsets.length]!;
      const frame = host.nextCall(`bye-${n}`);
      const call = routeTagged(r.started, `bye-${n}`);
      await frame;
      if (offset <= 0) {
        call.controller.abort();
        await delay(-offset);
        host.ws.terminate();
      } else {
        host.ws.terminate();
        await delay(offset);
        call.controller.abort();
      }
      const capture = await call.pending;
      expect([130, 69]).toContain(capture.exitCode);
      seen[capture.exitCode as 130 | 69]++;
      expect(call.settled.count).toBe(1);
    });
    expect(seen[130] + seen[69]).toBe(200);
    expect(r.log.errors()).toEqual([]);
  });
});

describe('deadline racing the result', () => {
  it('a result 0–6 ms around a 3 ms deadline settles each call once: the result or 124, never both (1000 calls)', async () => {
    const r = await rig();
    const outcomes = { result: 0, deadline: 0 };
    const runs: { settled: { count: number } }[] = [];
    await inLanes(ITERATIONS, 20, async (n) => {
      const tag = `dl-${n}`;
      const frame = r.host.nextCall(tag);
      const call = routeTagged(r.started, tag, { deadlineMs: 3 });
      runs.push(call);
      const id = (await frame).id as string;
      await delay(n % 7);
      r.host.answer(id, `out-${tag}`);
      const capture = await call.pending;
      if (capture.exitCode === 124) {
        outcomes.deadline++;
        expect(capture.stdout.length).toBe(0);
        expect(text(capture.stderr)).toBe('toolwire: deadline of 3 ms exceeded\n');
      } else {
        outcomes.result++;
        expect(capture.exitCode).toBe(0);
        expect(text(capture.stdout)).toBe(`out-${tag}`);
      }
    });
    expect(runs.every((c) => c.settled.count === 1)).toBe(true);
    expect(outcomes.result + outcomes.deadline).toBe(ITERATIONS);
    expect(outcomes.deadline).toBeGreaterThan(0);
    // Every call that expired sent one cancel {reason: deadline}; late results were dropped, not crashed on.
    await waitFor(() => r.host.cancels.length >= outcomes.deadline, 'the deadline cancels');
    expect(r.host.cancels.every((c) => c.reason === 'deadline')).toBe(true);
    await expectQuiet(r);
  });
});

describe('duplicate, unknown and foreign results', () => {
  it('a result arriving twice, results for unknown ids, for id "0" and for another host’s call are dropped; each call settles once with its own output (1000 calls)', async () => {
    // Every drop logged: room for all of them in the per-host warning limit (issue 11 bounds it).
    const r = await rig({ maxLogLinesPerHost: 10_000 });
    const beta = await drivenHost(r.started, [{ name: 'other', inputSchema: { type: 'object' } }], 'beta');
    const betaFrame = beta.nextCall();
    const betaCall = r.started.server.router.route({
      id: 'b',
      name: 'beta__other',
      input: {},
      workspace: '',
      agent: 'agent',
      signal: new AbortController().signal,
    });
    const betaId = (await betaFrame).id as string;
    const runs: { settled: { count: number } }[] = [];
    await inLanes(ITERATIONS, 20, async (n) => {
      const tag = `dup-${n}`;
      const frame = r.host.nextCall(tag);
      const call = routeTagged(r.started, tag);
      runs.push(call);
      const id = (await frame).id as string;
      switch (n % 4) {
        case 0: // twice in the same tick (usually one TCP segment)
          r.host.answer(id, `out-${tag}`);
          r.host.answer(id, 'second copy');
          break;
        case 1: // unknown ids and "0" first
          r.host.answer('0', 'zero');
          r.host.answer(`no-such-${n}`, 'unknown');
          r.host.answer(id, `out-${tag}`);
          break;
        case 2: // beta's pending call id, sent by alpha
          r.host.answer(betaId, 'foreign');
          r.host.answer(id, `out-${tag}`);
          break;
        default: // the copy arrives after the call settled
          r.host.answer(id, `out-${tag}`);
          await call.pending;
          r.host.answer(id, 'late copy');
      }
      const capture = await call.pending;
      expect(capture.exitCode).toBe(0);
      expect(text(capture.stdout)).toBe(`out-${tag}`);
    });
    expect(runs.every((c) => c.settled.count === 1)).toBe(true);
    // Beta's call was never touched by alpha's frames.
    expect(r.started.server.router.hosts().find((h) => h.name === 'beta')!.inFlight).toBe(1);
    beta.answer(betaId, 'beta own');
    expect(text((await betaCall)!.stdout)).toBe('beta own');
    // Each drop was logged (2 per call for n%4==1, 1 otherwise); none was an error.
    const expectedDrops = ITERATIONS + ITERATIONS / 4;
    await waitFor(
      () => r.log.entries.filter((e) => e.msg === 'result for an unknown or settled call dropped').length === expectedDrops,
      `${expectedDrops} drop log lines`,
    );
    await expectQuiet(r);
  });
});
