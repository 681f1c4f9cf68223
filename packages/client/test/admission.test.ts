/**
 * Issue 11 item 3 on the tool host: a server cannot make a host run more than its bounds — calls
 * running at once (host-wide and per tool), a bounded queue, input bytes held — and no tool starts
 * after its call was answered or its deadline passed. Unit tests of the counting (`Admission`), a
 * `ToolHost` against a fake server, and the spawn paths' deadline guard. The 10,000-call burst
 * against a real `toolwire host` process is in test/adversarial/host-bounds.test.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Admission, type Waiter } from '../src/calls/admission.js';
import { Refusals } from '../src/calls/overload.js';
import { ToolHost, type ToolHostOptions } from '../src/index.js';
import { runCommandTool } from '../src/subprocess/run-command.js';
import { FakeServer } from './helpers/fake-server.js';
import { useScratch } from './helpers/process.js';

const object = { type: 'object' } as const;
const silent = pino({ level: 'silent' });
const text = (s: string | undefined) => s ?? '';
const call = (id: string, tool: string, input: unknown = {}, deadlineMs = 10_000) =>
  ({ type: 'call', id, tool, input, workspace: '/ws', agent: 'a', deadlineMs }) as const;

describe('Admission (counting only)', () => {
  const waiter = (tool: string, limit: number, bytes: number, started: string[], name = tool): Waiter => ({ tool, limit, bytes, start: () => started.push(name) });

  it('runs up to maxConcurrentCalls, queues up to maxQueuedCalls, then refuses; the input bytes bound comes first', () => {
    const a = new Admission({ maxConcurrentCalls: 2, maxQueuedCalls: 1, maxInputBytes: 100 });
    expect([a.admit('t', Infinity, 10), a.admit('t', Infinity, 10)]).toEqual(['run', 'run']);
    expect(a.admit('t', Infinity, 10)).toBe('queue');
    a.enqueue(waiter('t', Infinity, 10, []));
    expect(a.admit('t', Infinity, 10)).toBe('queue_full');
    expect(a.admit('t', Infinity, 71)).toBe('input_bytes');
    expect([a.running, a.queued, a.bytes]).toEqual([2, 1, 30]);
  });

  it('starts waiters in arrival order when a call ends, passing over a tool at its own bound', () => {
    const a = new Admission({ maxConcurrentCalls: 3, maxQueuedCalls: 10, maxInputBytes: 1000 });
    const started: string[] = [];
    expect(a.admit('one', 1, 1)).toBe('run');
    expect(a.admit('other', Infinity, 1)).toBe('run');
    expect(a.admit('other', Infinity, 1)).toBe('run');
    for (const [tool, limit, name] of [
      ['one', 1, 'one-a'],
      ['other', Infinity, 'other-a'],
      ['one', 1, 'one-b'],
      ['other', Infinity, 'other-b'],
    ] as const) {
      expect(a.admit(tool, limit, 1)).toBe('queue');
      a.enqueue(waiter(tool, limit, 1, started, name));
    }
    a.finish('other', Infinity, 1); // a place frees, but `one` is at its bound: other-a goes first
    expect(started).toEqual(['other-a']);
    a.finish('one', 1, 1); // one's place frees: the first waiting call of `one`
    expect(started).toEqual(['other-a', 'one-a']);
    expect([a.running, a.queued]).toEqual([3, 2]);
  });

  it('a waiter that ends at once when started (a synchronous handler) lets the next ones start without recursion', () => {
    const a = new Admission({ maxConcurrentCalls: 1, maxQueuedCalls: 10, maxInputBytes: 1000 });
    const started: string[] = [];
    expect(a.admit('t', Infinity, 1)).toBe('run');
    for (const name of ['w1', 'w2', 'w3']) {
      expect(a.admit('t', Infinity, 1)).toBe('queue');
      a.enqueue({ tool: 't', limit: Infinity, bytes: 1, start: () => (started.push(name), a.finish('t', Infinity, 1)) });
    }
    a.finish('t', Infinity, 1);
    expect(started).toEqual(['w1', 'w2', 'w3']);
    expect([a.running, a.queued, a.bytes]).toEqual([0, 0, 0]);
  });

  it('a withdrawn waiter frees its bytes and is never started', () => {
    const a = new Admission({ maxConcurrentCalls: 1, maxQueuedCalls: 10, maxInputBytes: 1000 });
    const started: string[] = [];
    a.admit('t', Infinity, 5);
    a.admit('t', Infinity, 7);
    const w = waiter('t', Infinity, 7, started);
    a.enqueue(w);
    a.withdraw(w);
    a.withdraw(w); // twice: nothing more
    expect([a.queued, a.bytes]).toEqual([0, 5]);
    a.finish('t', Infinity, 5);
    expect(started).toEqual([]);
  });
});

describe('Refusals', () => {
  it('answers 75 naming the bound, and warns at most once per 10 s however many calls are refused', () => {
    const warnings: unknown[][] = [];
    const logger = { debug() {}, info() {}, warn: (...args: unknown[]) => warnings.push(args), error() {} };
    const a = new Admission({ maxConcurrentCalls: 1, maxQueuedCalls: 0, maxInputBytes: 10 });
    const refusals = new Refusals(a, logger);
    const captures = Array.from({ length: 1000 }, (_, i) => refusals.refuse(`c${i}`, i % 2 ? 'queue_full' : 'input_bytes', 11));
    expect(new Set(captures.map((c) => [c.exitCode, c.failure].join()))).toEqual(new Set(['75,overloaded']));
    expect(Buffer.from(captures[0]!.stderr).toString()).toBe(
      'toolwire: tool host overloaded: a call of 11 bytes would pass the 10 bytes of call input held at once (maxInFlightInputBytes); retry later\n',
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]![0]).toMatchObject({ refused: 1 });
  });
});

describe('ToolHost bounds what the server can make it do', () => {
  const servers: FakeServer[] = [];
  const hosts: ToolHost[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.close()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  /** A host with one in-process tool `gate` whose calls end only when the test says so. */
  async function gated(options: Partial<ToolHostOptions>) {
    const s = await FakeServer.start();
    servers.push(s);
    const runs: { id: string; release: () => void; signal: AbortSignal }[] = [];
    const h = new ToolHost({ server: s.url, token: 't', logger: silent, reconnect: false, ...options });
    hosts.push(h);
    h.tool(
      'gate',
      { inputSchema: object },
      (_input, ctx) => new Promise<string>((resolve) => runs.push({ id: ctx.id, release: () => resolve(`done ${ctx.id}`), signal: ctx.signal })),
    );
    await h.start();
    const conn = s.connections[0]!;
    return { s, h, conn, runs, result: (id: string) => waitResult(conn, id) };
  }

  async function waitResult(conn: FakeServer['connections'][number], id: string) {
    for (;;) {
      const r = await conn.next('result');
      if (r.id === id) return r;
    }
  }

  it('calls past maxConcurrentCalls wait, past maxQueuedCalls are answered 75 at once and never run; a freed place starts the next', async () => {
    const { conn, runs, result } = await gated({ maxConcurrentCalls: 2, maxQueuedCalls: 1 });
    for (const id of ['c1', 'c2', 'c3', 'c4']) conn.send(call(id, 'gate'));
    const refused = await result('c4');
    expect(refused.exitCode).toBe(75);
    expect(refused.failure).toBe('overloaded');
    expect(text(refused.stderr)).toMatch(
      /toolwire: tool host overloaded: 2 calls running \(maxConcurrentCalls 2\) and 1 waiting \(maxQueuedCalls 1\); retry later\n$/,
    );
    expect(runs.map((r) => r.id)).toEqual(['c1', 'c2']);
    runs[0]!.release();
    expect((await result('c1')).stdout).toBe('done c1');
    await expect.poll(() => runs.map((r) => r.id)).toEqual(['c1', 'c2', 'c3']);
    runs[1]!.release();
    runs[2]!.release();
    expect((await result('c3')).stdout).toBe('done c3');
  });

  it('a queued call whose deadline passes is answered 124 and its tool never runs; a cancel answers 130 (stop) or 124 (deadline)', async () => {
    const { conn, runs, result } = await gated({ maxConcurrentCalls: 1 });
    conn.send(call('run', 'gate'));
    conn.send(call('late', 'gate', {}, 150));
    conn.send(call('stopped', 'gate'));
    conn.send(call('server-deadline', 'gate'));
    const late = await result('late');
    expect(late.exitCode).toBe(124);
    expect(text(late.stderr)).toMatch(/toolwire: deadline of 150 ms exceeded; the call was waiting for a place to run and its tool was not started\n$/);
    conn.send({ type: 'cancel', id: 'stopped', reason: 'stop' });
    conn.send({ type: 'cancel', id: 'server-deadline', reason: 'deadline' });
    expect((await result('stopped')).exitCode).toBe(130);
    expect((await result('server-deadline')).exitCode).toBe(124);
    runs[0]!.release();
    await result('run');
    expect(runs.map((r) => r.id)).toEqual(['run']);
  });

  it('input bytes held for running and waiting calls are bounded: a call that would pass the bound is answered 75', async () => {
    const pad = 'x'.repeat(40 * 1024);
    const { conn, runs, result } = await gated({ maxPayload: 64 * 1024, maxInFlightInputBytes: 100 * 1024 });
    conn.send(call('a', 'gate', { pad }));
    conn.send(call('b', 'gate', { pad }));
    conn.send(call('c', 'gate', { pad }));
    const c = await result('c');
    expect(c.exitCode).toBe(75);
    expect(text(c.stderr)).toMatch(/would pass the 102400 bytes of call input held at once \(maxInFlightInputBytes\)/);
    await expect.poll(() => runs.length).toBe(2);
    runs[0]!.release();
    await result('a');
    conn.send(call('d', 'gate', { pad })); // room again
    await expect.poll(() => runs.map((r) => r.id)).toEqual(['a', 'b', 'd']);
    for (const r of runs.slice(1)) r.release();
  });

  it('a lost connection drops its queued calls (never run) and keeps the places of its dying calls until they end', async () => {
    const { h, conn, runs } = await gated({ maxConcurrentCalls: 1 });
    conn.send(call('r', 'gate'));
    conn.send(call('q', 'gate'));
    await expect.poll(() => runs.length).toBe(1);
    conn.ws.terminate();
    await expect.poll(() => runs[0]!.signal.aborted).toBe(true);
    runs[0]!.release();
    await h.close();
    expect(runs.map((r) => r.id)).toEqual(['r']);
  });

  it('options are checked at once', () => {
    const make = (o: Partial<ToolHostOptions>) => new ToolHost({ server: 'ws://127.0.0.1:1', ...o });
    expect(() => make({ maxConcurrentCalls: 0 })).toThrow(RangeError);
    expect(() => make({ maxQueuedCalls: -1 })).toThrow(RangeError);
    expect(() => make({ maxInFlightInputBytes: 1024 })).toThrow('ToolHostOptions.maxInFlightInputBytes must be an integer ≥ 16777216, got 1024');
    expect(() => make({ maxPayload: 1024, maxInFlightInputBytes: 1024 })).not.toThrow();
    expect(() => make({ maxPayload: 128 * 1024 * 1024 })).not.toThrow(); // the default follows a larger maxPayload
    expect(() => make({}).command('t', { inputSchema: object, command: ['x'], maxConcurrency: 0 })).toThrow(
      'tool t: maxConcurrency must be a positive integer, got 0',
    );
  });
});

describe('no tool starts after its call’s deadline', () => {
  const scratch = useScratch('toolwire-startby-');
  for (const spawnHelper of [true, false]) {
    it(`a launch that comes after startBy is answered 124 and spawns nothing (${spawnHelper ? 'spawn helper' : 'local spawn'})`, async () => {
      const marker = join(scratch.dir, 'started');
      const ctx = { id: 'late', agent: 'a', workspace: '/', deadlineMs: 1000, signal: new AbortController().signal };
      const capture = await runCommandTool({ inputSchema: object, command: ['sh', '-c', `touch ${marker}`] }, {}, ctx, { spawnHelper, startBy: Date.now() - 1 });
      expect(capture.exitCode).toBe(124);
      expect(Buffer.from(capture.stderr).toString()).toMatch(/toolwire: the call reached its deadline before its tool could start\n$/);
      const ok = await runCommandTool({ inputSchema: object, command: ['sh', '-c', 'echo ran'] }, {}, ctx, { spawnHelper, startBy: Date.now() + 10_000 });
      expect(Buffer.from(ok.stdout).toString()).toBe('ran\n');
      expect(existsSync(marker)).toBe(false);
    });
  }
});
