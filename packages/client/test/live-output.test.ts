/**
 * Live output on the tool host (protocol 2, DESIGN §5 "Live output", §7) against a fake server
 * that speaks v2, offers a window and checks every chunk (order, size, window, `result.streamed`).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ResultMessage, appendReason, fromWire } from '@toolwire/protocol';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';
import { ToolHost, type ToolHostOptions } from '../src/index.js';
import { type FakeConnection, FakeServer, type FakeServerOptions } from './helpers/fake-server.js';
import { killQuietly, poll, useScratch } from './helpers/process.js';

const object = { type: 'object' } as const;
const silent = pino({ level: 'silent' });
const here = fileURLToPath(new URL('.', import.meta.url));
const WRITER = join(here, 'fixtures', 'writer.cjs');
const KiB = 1024;
const MiB = 1024 * KiB;

const servers: FakeServer[] = [];
const hosts: ToolHost[] = [];
const scratch = useScratch('toolwire-live-');
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const STREAMING: FakeServerOptions = { protocol: 2, output: { windowBytes: 64 * KiB, maxChunkBytes: 16 * KiB } };

async function connect(
  serverOptions: FakeServerOptions,
  setup: (h: ToolHost) => ToolHost = (h) => h,
  hostOptions: Partial<ToolHostOptions> = {},
): Promise<FakeConnection> {
  const s = await FakeServer.start(serverOptions);
  servers.push(s);
  const h = setup(new ToolHost({ server: s.url, token: 'tok', logger: silent, reconnect: false, ...hostOptions }));
  hosts.push(h);
  await h.start();
  return s.connections[0]!;
}

const writer = (h: ToolHost) => h.command('writer', { inputSchema: object, command: [process.execPath, WRITER] });
const sh = (script: string) => (h: ToolHost) => h.command('sh', { inputSchema: object, command: ['sh', '-c', script] });
let ids = 0;
function call(conn: FakeConnection, tool: string, input: unknown = {}, deadlineMs = 20_000): string {
  const id = `c${++ids}`;
  conn.send({ type: 'call', id, tool, input, workspace: '/ws', agent: 'agent-1', deadlineMs });
  return id;
}
const resultOf = (conn: FakeConnection, id: string, ms = 15_000) =>
  poll(() => conn.frames.find((f): f is ResultMessage => f.type === 'result' && f.id === id), ms, `the result of ${id}`);
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

type Step = [fd: 1 | 2, size: number, byte: number];
function planned(steps: readonly Step[], fd: 1 | 2): Buffer {
  return Buffer.concat(steps.filter((s) => s[0] === fd).map(([, size, byte]) => Buffer.alloc(size, byte)));
}

describe.each([
  { spawnHelper: true, how: 'spawned by the spawn helper' },
  { spawnHelper: false, how: 'spawned by the host process' },
])('live output of subprocess tools, $how', ({ spawnHelper }) => {
  it('streamed chunks plus the result are exactly what the tool wrote, in order, whatever the chunk sizes, interleaving and stop point (property)', async () => {
    const conn = await connect(STREAMING, writer, { spawnHelper });
    const step = fc.tuple(fc.constantFrom<1 | 2>(1, 2), fc.integer({ min: 1, max: 150_000 }), fc.integer({ min: 0, max: 255 }));
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), fc.option(fc.integer({ min: 0, max: 4 })), async (steps, stopAfterChunks) => {
        const stop = stopAfterChunks !== null;
        const id = call(conn, 'writer', { steps, then: stop ? 'sleep' : 'exit' });
        if (stop) {
          // The stop lands after a random number of chunks beyond the first (the tool is running: it holds
          // SIGTERM until its planned writes are done), wherever the host is in reading and sending them.
          const chunks = () => conn.streams.get(id)?.chunks.length ?? 0;
          await poll(() => chunks() >= 1 + stopAfterChunks || conn.streamedBytes(id) === planned(steps, 1).length + planned(steps, 2).length, 10_000);
          conn.send({ type: 'cancel', id, reason: 'stop' });
        }
        const result = await resultOf(conn, id);
        const capture = conn.capture(result);
        expect(conn.violations).toEqual([]);
        expect(capture.stdout.equals(planned(steps, 1))).toBe(true);
        const stderr = stop ? Buffer.from(appendReason(planned(steps, 2), 'cancelled by stop')) : planned(steps, 2);
        expect(capture.stderr.equals(stderr)).toBe(true);
        expect(result.exitCode).toBe(stop ? 130 : 0);
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('a stop mid-stream: the line streamed while the tool ran is kept, the result adds only the reason line (130)', async () => {
    const conn = await connect(STREAMING, sh('echo started; sleep 30'), { spawnHelper });
    const id = call(conn, 'sh');
    const chunk = await conn.next('output');
    expect(chunk).toEqual({ type: 'output', id, stream: 'stdout', seq: 0, data: 'started\n' });
    conn.send({ type: 'cancel', id, reason: 'stop' });
    const result = await resultOf(conn, id);
    expect(result).toMatchObject({
      exitCode: 130,
      failure: 'cancelled',
      stdout: '',
      stderr: 'toolwire: cancelled by stop\n',
      streamed: { stdout: 8, stderr: 0, chunks: 1 },
    });
    expect(conn.violations).toEqual([]);
  });

  it('a deadline mid-stream: 124 with what was streamed, and the reason line after a stderr line left open', async () => {
    const conn = await connect(STREAMING, sh('printf "half a line" >&2; echo out; sleep 30'), { spawnHelper });
    const id = call(conn, 'sh', {}, 400);
    await poll(() => conn.streamedBytes(id) === 'half a line'.length + 4, 5000, 'both streams streamed');
    const result = await resultOf(conn, id);
    const capture = conn.capture(result);
    expect(result).toMatchObject({ exitCode: 124, failure: 'deadline' });
    expect(text(capture.stdout)).toBe('out\n');
    // The line break a non-streamed capture gets before the reason line (the streamed stderr did not end with one).
    expect(text(capture.stderr)).toBe('half a line\ntoolwire: deadline of 400 ms exceeded\n');
    expect(conn.violations).toEqual([]);
  });

  it('a short tool on a streaming connection: its whole output, in chunks gathered per loop turn or in the result', async () => {
    const conn = await connect(STREAMING, sh('echo hi; echo err >&2'), { spawnHelper });
    const id = call(conn, 'sh');
    const result = await resultOf(conn, id);
    expect(result.exitCode).toBe(0);
    const capture = conn.capture(result);
    expect([text(capture.stdout), text(capture.stderr)]).toEqual(['hi\n', 'err\n']);
    expect(conn.violations).toEqual([]);
  });

  it('a v1 server, a v2 server that offers no window, or a host with liveOutput off: no output frame, the whole capture in the result, capped as before', async () => {
    const cases: [FakeServerOptions, Partial<ToolHostOptions>][] = [
      [{}, {}],
      [{ protocol: 2 }, {}],
      [STREAMING, { liveOutput: false }],
    ];
    for (const [options, hostOptions] of cases) {
      const conn = await connect(options, writer, { spawnHelper, maxCaptureBytes: 64 * KiB, ...hostOptions });
      const id = call(conn, 'writer', { steps: [[1, 200_000, 0x61]] });
      const result = await resultOf(conn, id);
      expect(conn.frames.filter((f) => f.type === 'output' || f.type === 'progress')).toEqual([]);
      expect(result.streamed).toBeUndefined();
      const stdout = text(fromWire(result.stdout, result.stdoutEncoding));
      expect(stdout).toContain('[... stdout truncated: 200000 bytes / 1 lines total; showing the first 32768 and last 32768 bytes ...]');
    }
  });
});

describe('backpressure: a tool that writes without end and a server that grants no credit', () => {
  it('the host stops at its window, the tool blocks in write(2), host RSS stays bounded, other calls keep running; credit resumes the tool', async () => {
    const s = await FakeServer.start({ protocol: 2, output: { windowBytes: MiB, maxChunkBytes: 64 * KiB }, credit: 'manual' });
    servers.push(s);
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, join(here, 'fixtures', 'streaming-host.ts'), s.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    scratch.track(child.pid!);
    try {
      await poll(() => s.connections[0]?.frames.some((f) => f.type === 'advertise'), 15_000, 'the host to advertise');
      const conn = s.connections[0]!;
      const echo = async () => {
        const id = call(conn, 'echo', { n: ids });
        expect((await resultOf(conn, id, 5000)).exitCode).toBe(0);
      };
      // Warm up (spawn helper, reaper, one streaming call), then read the idle RSS.
      expect((await resultOf(conn, call(conn, 'writer', { steps: [[1, 10, 0x61]] }))).exitCode).toBe(0);
      await echo();
      const idle = treeRssKiB(child.pid!);

      const counter = join(scratch.dir, 'written');
      const id = call(conn, 'writer', { flood: 16 * 1024, counter }, 120_000); // 1 GiB
      await poll(() => conn.streamedBytes(id) === MiB, 15_000, 'the first window streamed');
      for (let i = 0; i < 20; i++) await echo(); // other calls on the host answer while the flood is held
      const written = Number(await readFile(counter, 'utf8'));
      const grown = treeRssKiB(child.pid!) - idle;
      // Held: the tool wrote the window plus what the pipe, the helper and the host hold (a few reads), not the gigabyte.
      expect(written).toBeLessThan(3 * MiB);
      expect(conn.streamedBytes(id)).toBe(MiB);
      expect(grown).toBeLessThan(64 * 1024); // KiB: the DESIGN bound is the window plus one read per stream
      conn.credit(id, 4 * MiB);
      await poll(() => conn.streamedBytes(id) === 5 * MiB, 15_000, 'credit to be used');
      await poll(async () => Number(await readFile(counter, 'utf8')) > written, 15_000, 'the tool to write again');
      conn.send({ type: 'cancel', id, reason: 'stop' });
      const result = await resultOf(conn, id);
      expect(result).toMatchObject({ exitCode: 130, streamed: { stdout: 5 * MiB, stderr: 0 } });
      expect(conn.violations).toEqual([]);
    } finally {
      killQuietly(child.pid);
    }
  }, 60_000);
});

describe('in-process tools', () => {
  it('ctx.write streams as the handler runs, ctx.progress sends progress, the returned output follows in the result', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const conn = await connect(STREAMING, (h) =>
      h.tool('live', { inputSchema: object }, async (_input, ctx) => {
        await ctx.write('stdout', 'first\n');
        ctx.progress('half way\nthere');
        for (let i = 0; i < 50; i++) ctx.progress(`step ${i}`); // within 100 ms of the first: one more frame, the last message
        await ctx.write('stderr', new Uint8Array([0xff, 0x0a]));
        await gate;
        return 'last\n';
      }),
    );
    const id = call(conn, 'live');
    const chunks = [await conn.next('output'), await conn.next('output')];
    expect(chunks).toEqual([
      { type: 'output', id, stream: 'stdout', seq: 0, data: 'first\n' },
      { type: 'output', id, stream: 'stderr', seq: 1, data: '/wo=', encoding: 'base64' },
    ]);
    expect(await conn.next('progress')).toEqual({ type: 'progress', id, message: 'half way there' });
    expect(await conn.next('progress')).toEqual({ type: 'progress', id, message: 'step 49' });
    release();
    const result = await resultOf(conn, id);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'last\n', stderr: '', streamed: { stdout: 6, stderr: 2, chunks: 2 } });
    expect(conn.frames.filter((f) => f.type === 'progress')).toHaveLength(2);
    expect(conn.violations).toEqual([]);
  });

  it('on a v1 server ctx.write goes into the result and ctx.progress sends nothing', async () => {
    const conn = await connect({}, (h) =>
      h.tool('live', { inputSchema: object }, async (_input, ctx) => {
        await ctx.write('stdout', 'first\n');
        ctx.progress('working');
        await ctx.write('stderr', 'warn');
        throw new Error('boom');
      }),
    );
    const result = await resultOf(conn, call(conn, 'live'));
    expect(result).toMatchObject({ exitCode: 70, stdout: 'first\n', stderr: 'warn\ntoolwire: tool failed: boom\n' });
    expect(result.streamed).toBeUndefined();
    expect(conn.frames.filter((f) => f.type === 'output' || f.type === 'progress')).toEqual([]);
  });

  it('ctx.write waits for credit past the window, throws a RangeError when not awaited, a TypeError for a bad stream or data', async () => {
    const errors: unknown[] = [];
    let passed = false;
    const conn = await connect({ ...STREAMING, credit: 'manual' }, (h) =>
      h.tool('big', { inputSchema: object }, async (_input, ctx) => {
        for (const bad of [() => ctx.write('stdin' as 'stdout', 'x'), () => ctx.write('stdout', 42 as unknown as string)]) {
          try {
            void bad();
          } catch (error) {
            errors.push(error);
          }
        }
        const held = ctx.write('stdout', Buffer.alloc(100 * KiB, 0x61)); // more than the 64 KiB window
        try {
          void ctx.write('stdout', 'more');
        } catch (error) {
          errors.push(error);
        }
        await held;
        passed = true;
        return '';
      }),
    );
    const id = call(conn, 'big');
    await poll(() => conn.streamedBytes(id) === 64 * KiB, 5000, 'the window streamed');
    expect(passed).toBe(false);
    expect(errors.map((e) => (e as Error).constructor.name)).toEqual(['TypeError', 'TypeError', 'RangeError']);
    conn.credit(id, 64 * KiB);
    const result = await resultOf(conn, id);
    expect(passed).toBe(true);
    expect(result.streamed).toEqual({ stdout: 100 * KiB, stderr: 0, chunks: 7 });
    expect(conn.violations).toEqual([]);
  });
});

describe('credit', () => {
  it('credit for an unknown or finished call is ignored and the host keeps working', async () => {
    const conn = await connect(STREAMING, sh('echo ok'));
    const first = call(conn, 'sh');
    await resultOf(conn, first);
    conn.send({ type: 'credit', id: first, bytes: 1000 });
    conn.send({ type: 'credit', id: 'no-such-call', bytes: 1 });
    const second = call(conn, 'sh');
    const result = await resultOf(conn, second);
    expect(result.exitCode).toBe(0);
    expect(text(conn.capture(result).stdout)).toBe('ok\n');
    expect(conn.violations).toEqual([]);
    expect(conn.ws.readyState).toBe(conn.ws.OPEN);
  });
});

/** RSS of `pid` and its children (the spawn helper, the reaper), KiB. Not the tools: they are the helper's children. */
function treeRssKiB(pid: number): number {
  const rss = (p: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return rss(pid) + children.reduce((sum, c) => sum + rss(c), 0);
}
