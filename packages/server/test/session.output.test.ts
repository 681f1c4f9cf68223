/**
 * Live output through a real host session (DESIGN §5 "Live output (v2)"): an http.Server on
 * 127.0.0.1:0 with the host endpoint, a raw protocol-2 tool host (`streaming-host.ts`) and
 * `router.route()` with an `onOutput` consumer, as the executor calls it.
 */
import { encodeOutputFrame, headTail } from '@toolwire/protocol';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { OutputChunk, RoutedCall } from '../src/seam.js';
import { ALPHA_TOKEN, type Harness, SLOW, recordingLogger, routedCall, startEndpoint, teardown, text, waitFor } from './endpoint.harness.js';
import { type StreamingCall, StreamingHost, type StreamingHostOptions } from './streaming-host.js';

const hosts: StreamingHost[] = [];
afterEach(async () => {
  for (const host of hosts.splice(0)) host.ws.terminate();
  await teardown();
  frameKind = 'binary';
});

/** Chunks travel as binary `output` frames (the tool host's) and as JSON `output` messages; both are checked alike. */
const FRAMES = ['binary', 'json'] as const;
let frameKind: (typeof FRAMES)[number] = 'binary';

async function connect(h: Harness, options: Partial<StreamingHostOptions> = {}): Promise<StreamingHost> {
  const host = await StreamingHost.connect(h.url, { token: ALPHA_TOKEN, tools: [SLOW], frames: frameKind, ...options });
  hosts.push(host);
  return host;
}

/** Route a call to alpha__slow that records its chunks; resolves once the host has the call. */
async function start(h: Harness, host: StreamingHost, extra: Partial<RoutedCall> = {}) {
  const chunks: OutputChunk[] = [];
  const { call, controller } = routedCall('alpha__slow', { onOutput: (chunk) => void chunks.push(chunk), ...extra });
  const pending = h.router.route(call);
  const wire = await host.call(host.calls.size);
  return { pending, chunks, controller, wire };
}

const joined = (chunks: OutputChunk[], stream: 'stdout' | 'stderr'): string => text(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.bytes)));

/** Resolves once the host has received every frame the server sent so far (a `call` sent now comes after them). */
async function flushed(h: Harness, host: StreamingHost): Promise<StreamingCall> {
  return (await start(h, host)).wire;
}

describe('negotiation', () => {
  it('offers a protocol-2 host the output window in welcome, with the server options', async () => {
    const h = await startEndpoint({ outputWindowBytes: 4096, outputChunkBytes: 512 });
    const host = await connect(h);
    expect(host.welcome).toMatchObject({ protocol: 2, output: { windowBytes: 4096, maxChunkBytes: 512 } });
  });

  it('gives a protocol-1 host no output window, and an output chunk there fails its call 76 with the session kept', async () => {
    const h = await startEndpoint();
    const host = await connect(h, { v1: true });
    expect(host.welcome.protocol).toBe(1);
    expect(host.welcome).not.toHaveProperty('output');
    const { pending, chunks, wire } = await start(h, host);
    host.send({ type: 'output', id: wire.id, stream: 'stdout', seq: 0, data: 'early\n' });
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stderr)).toMatch(/output on a protocol 1 connection/);
    expect(chunks).toEqual([]);
    const next = await start(h, host);
    next.wire.end(0, { stdout: 'fine\n' });
    expect(text((await next.pending)!.stdout)).toBe('fine\n');
  });

  it('rejects a welcome window smaller than a chunk at once', async () => {
    await expect(startEndpoint({ outputWindowBytes: 100, outputChunkBytes: 200 })).rejects.toThrow(RangeError);
  });
});

describe.each(FRAMES)('chunks and capture (%s frames)', (frames) => {
  beforeEach(() => void (frameKind = frames));
  it('hands chunks to the consumer in order and builds the capture from the chunks and the result remainder', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, chunks, wire } = await start(h, host);
    await wire.write('stdout', 'one\n');
    await wire.write('stderr', 'warn\n');
    await wire.write('stdout', 'two\n');
    await waitFor(() => chunks.length === 3, 'three chunks');
    wire.end(3, { stdout: 'three\n' });
    const capture = (await pending)!;
    expect(text(capture.stdout)).toBe('one\ntwo\nthree\n');
    expect(text(capture.stderr)).toBe('warn\n');
    expect(capture.exitCode).toBe(3);
    expect(chunks.map((c) => [c.seq, c.stream])).toEqual([
      [0, 'stdout'],
      [1, 'stderr'],
      [2, 'stdout'],
      [3, 'stdout'],
    ]);
    expect(joined(chunks, 'stdout')).toBe('one\ntwo\nthree\n');
  });

  it.each([
    { cap: 96, window: 64, chunk: 32, runs: 40 }, // small chunks, gathered before they are kept
    { cap: 20_000, window: 64 * 1024, chunk: 12_000, runs: 15 }, // small and large chunks mixed
  ])(
    'property: random chunk sizes, interleaved streams and a remainder give the capture a host would have sent (cap $cap, chunks ≤ $chunk)',
    async ({ cap, window, chunk, runs }) => {
      // per stream: head cap/2 + tail cap/2, with the marker past it
      const h = await startEndpoint({ maxCaptureBytes: cap, outputWindowBytes: window, outputChunkBytes: chunk });
      const host = await connect(h);
      const piece = fc.record({ stream: fc.constantFrom('stdout' as const, 'stderr' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: chunk }) });
      await fc.assert(
        fc.asyncProperty(
          fc.array(piece, { maxLength: 24 }),
          fc.uint8Array({ maxLength: 40 }),
          fc.uint8Array({ maxLength: 40 }),
          async (pieces, restOut, restErr) => {
            const { pending, chunks, wire } = await start(h, host);
            for (const p of pieces) await wire.write(p.stream, p.bytes);
            wire.end(0, { stdout: restOut, stderr: restErr });
            const capture = (await pending)!;
            const all = (stream: 'stdout' | 'stderr', rest: Uint8Array) => Buffer.concat([...pieces.filter((p) => p.stream === stream).map((p) => p.bytes), rest]);
            const stdout = all('stdout', restOut);
            const stderr = all('stderr', restErr);
            expect(Buffer.from(capture.stdout)).toEqual(Buffer.from(headTail(stdout, cap / 2, cap / 2, 'stdout')));
            expect(Buffer.from(capture.stderr)).toEqual(Buffer.from(headTail(stderr, cap / 2, cap / 2, 'stderr')));
            // A call that streamed: the consumer saw every byte, in order (the capture keeps head and tail
            // of it); one that did not stream never calls it.
            if (pieces.length === 0) return void expect(chunks).toEqual([]);
            expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
            expect(Buffer.concat(chunks.filter((c) => c.stream === 'stdout').map((c) => c.bytes))).toEqual(stdout);
            expect(Buffer.concat(chunks.filter((c) => c.stream === 'stderr').map((c) => c.bytes))).toEqual(stderr);
          },
        ),
        { numRuns: runs },
      );
    },
  );

  it('property: a stop at a random point keeps what streamed, then the host partial answer, with one stop line', async () => {
    const h = await startEndpoint({ cancelGraceMs: 2_000 });
    const host = await connect(h);
    const line = fc.stringMatching(/^[a-z]{1,12}\n$/);
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 12 }), fc.nat(), async (lines, at) => {
        const stopAt = at % lines.length;
        const { pending, chunks, controller, wire } = await start(h, host);
        for (const l of lines.slice(0, stopAt)) await wire.write('stdout', l);
        controller.abort();
        expect(await wire.cancelled).toBe('stop');
        wire.end(143, { stdout: lines.slice(stopAt).join(''), stderr: 'toolwire: cancelled by stop\n' });
        const capture = (await pending)!;
        expect(capture.exitCode).toBe(130);
        expect(text(capture.stdout)).toBe(lines.join(''));
        expect(text(capture.stderr)).toBe('toolwire: cancelled by stop\n');
        if (stopAt > 0) expect(joined(chunks, 'stdout')).toBe(lines.join(''));
      }),
      { numRuns: 25 },
    );
  });
});

describe('flow control', () => {
  it('credits half a window once a synchronous consumer has taken it', async () => {
    const h = await startEndpoint({ outputWindowBytes: 16, outputChunkBytes: 8 });
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    await wire.write('stdout', 'a'.repeat(40)); // 5 chunks: needs credit after the first 16 bytes
    await waitFor(() => wire.credits.reduce((a, b) => a + b, 0) >= 24, 'credit for the bytes passed on');
    expect(wire.credits.every((c) => c >= 8)).toBe(true);
    wire.end(0);
    expect(text((await pending)!.stdout)).toBe('a'.repeat(40));
  });

  it('withholds credit while a slow consumer has not settled its promise, then sends it', async () => {
    const h = await startEndpoint({ outputWindowBytes: 16, outputChunkBytes: 8 });
    const host = await connect(h);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const seen: OutputChunk[] = [];
    const { pending, wire } = await start(h, host, { onOutput: (chunk) => (seen.push(chunk), held) });
    await wire.write('stdout', '12345678');
    await waitFor(() => seen.length === 1, 'the chunk reaches the consumer');
    await flushed(h, host); // every frame the server sent before this call frame has arrived
    expect(wire.credits).toEqual([]);
    release();
    await waitFor(() => wire.credits.length === 1, 'credit after the consumer settled');
    expect(wire.credits).toEqual([8]);
    wire.end(0);
    expect((await pending)!.exitCode).toBe(0);
  });

  it('fails the call 76 when the host sends past its window, and keeps the session', async () => {
    const h = await startEndpoint({ outputWindowBytes: 16, outputChunkBytes: 8 });
    const host = await connect(h);
    const never = new Promise<void>(() => {});
    const { pending, wire } = await start(h, host, { onOutput: () => never });
    wire.sendChunk('stdout', Buffer.from('aaaaaaaa'));
    wire.sendChunk('stdout', Buffer.from('bbbbbbbb'));
    wire.sendChunk('stdout', Buffer.from('c'));
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stdout)).toBe('aaaaaaaabbbbbbbb');
    expect(text(capture.stderr)).toBe('toolwire: host alpha broke the output protocol: output past the window: 17 bytes sent, 16 granted\n');
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
    const next = await start(h, host);
    next.wire.end(0, { stdout: 'ok' });
    expect(text((await next.pending)!.stdout)).toBe('ok');
  });

  it('fails the call 76 for a chunk over maxChunkBytes', async () => {
    const h = await startEndpoint({ outputWindowBytes: 64, outputChunkBytes: 8 });
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    wire.sendChunk('stderr', Buffer.from('123456789'));
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/output chunk of 9 bytes \(maxChunkBytes 8\)/);
  });
});

describe.each(FRAMES)('faults (%s frames)', (frames) => {
  beforeEach(() => void (frameKind = frames));
  it('fails the call 76 for a chunk with the wrong seq (out of order), session kept', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, chunks, wire } = await start(h, host);
    wire.sendChunk('stdout', Buffer.from('zero\n'), 0);
    wire.sendChunk('stdout', Buffer.from('two\n'), 2);
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stdout)).toBe('zero\n');
    expect(text(capture.stderr)).toMatch(/output seq 2 out of order \(expected 1\)/);
    expect(chunks.map((c) => text(c.bytes))).toEqual(['zero\n', expect.stringMatching(/^toolwire: host alpha broke the output protocol/)]);
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('fails the call 76 for a wrong-shape output frame naming it', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    host.send({ type: 'output', id: wire.id, stream: 'stdin', seq: 0, data: 'x' });
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/wrong-shape frame: output/);
  });

  it.each([
    ['says fewer bytes than arrived', { stdout: 1, stderr: 0, chunks: 1 }],
    ['says fewer chunks than arrived', { stdout: 6, stderr: 0, chunks: 0 }],
    ['is missing although chunks arrived', null],
  ])('fails the call 76 when result.streamed %s', async (_what, streamed) => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    await wire.write('stdout', 'hello\n');
    wire.end(0, {}, streamed);
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stdout)).toBe('hello\n');
    expect(text(capture.stderr)).toMatch(/result\.streamed says .* but \{"stdout":6,"stderr":0,"chunks":1\} arrived/);
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('fails the call 76 when result.streamed claims chunks that never arrived', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    wire.end(0, { stdout: 'x' }, { stdout: 3, stderr: 0, chunks: 1 });
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(76);
    expect(text(capture.stderr)).toMatch(/no output arrived/);
  });

  it('accepts result.streamed of zeros from a call that streamed nothing', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, chunks, wire } = await start(h, host);
    wire.end(0, { stdout: 'all at once\n' }, { stdout: 0, stderr: 0, chunks: 0 });
    expect(text((await pending)!.stdout)).toBe('all at once\n');
    expect(chunks).toEqual([]);
  });

  it('drops and logs output after the result, and output for an unknown id; neither reaches a consumer', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger });
    const host = await connect(h);
    const { pending, chunks, wire } = await start(h, host);
    await wire.write('stdout', 'in time\n');
    wire.end(0);
    expect(text((await pending)!.stdout)).toBe('in time\n');
    wire.sendChunk('stdout', Buffer.from('too late\n'));
    host.send({ type: 'output', id: 'no-such-call', stream: 'stdout', seq: 0, data: 'who?' });
    const dropped = () => entries.filter((e) => e.msg === 'output for an unknown or settled call dropped');
    await waitFor(() => dropped().length === 2, 'both chunks logged as dropped');
    expect(dropped().map((e) => (e.obj as { id: string }).id)).toEqual([wire.id, 'no-such-call']);
    expect(chunks.map((c) => text(c.bytes))).toEqual(['in time\n']);
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('logs a throwing consumer once and completes the call with the whole capture; credit still flows', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger, outputWindowBytes: 16, outputChunkBytes: 8 });
    const host = await connect(h);
    const { pending, wire } = await start(h, host, {
      onOutput: () => {
        throw new Error('consumer bug');
      },
    });
    await wire.write('stdout', 'x'.repeat(48));
    wire.end(0, { stdout: 'end\n' });
    const capture = (await pending)!;
    expect(text(capture.stdout)).toBe(`${'x'.repeat(48)}end\n`);
    expect(capture.exitCode).toBe(0);
    expect(entries.filter((e) => e.msg === 'output consumer threw; the call goes on')).toHaveLength(1);
  });
});

describe.each(FRAMES)('stop, deadline and disconnect mid-stream (%s frames)', (frames) => {
  beforeEach(() => void (frameKind = frames));
  it('a stop whose host never answers settles 130 at the grace with the streamed part, and the consumer gets the reason line last', async () => {
    const h = await startEndpoint({ cancelGraceMs: 100 });
    const host = await connect(h);
    const { pending, chunks, controller, wire } = await start(h, host);
    await wire.write('stdout', 'partial 1\n');
    await wire.write('stderr', 'partial 2');
    await waitFor(() => chunks.length === 2, 'two chunks');
    controller.abort();
    const capture = (await pending)!;
    expect(capture.exitCode).toBe(130);
    expect(text(capture.stdout)).toBe('partial 1\n');
    expect(text(capture.stderr)).toBe('partial 2\ntoolwire: cancelled by stop; the host did not answer within 100 ms\n');
    expect(joined(chunks, 'stderr')).toBe(text(capture.stderr));
  });

  it('a deadline mid-stream settles 124 with the streamed part', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, chunks, wire } = await start(h, host, { deadlineMs: 300 });
    await wire.write('stdout', 'started\n');
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 124, failure: 'deadline' });
    expect(text(capture.stdout)).toBe('started\n');
    expect(text(capture.stderr)).toBe('toolwire: deadline of 300 ms exceeded\n');
    expect(await wire.cancelled).toBe('deadline');
    expect(chunks.map((c) => text(c.bytes))).toEqual(['started\n', 'toolwire: deadline of 300 ms exceeded\n']);
  });

  it('output still in flight for a call the server ended (deadline, stop past the grace) is dropped at debug, so it cannot use up the warnings about its host; the late result is warned once', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger, cancelGraceMs: 100 });
    const host = await connect(h);
    const late = await start(h, host, { deadlineMs: 200 });
    await late.wire.write('stdout', 'started\n');
    expect((await late.pending)!.exitCode).toBe(124);
    const stopped = await start(h, host);
    await stopped.wire.write('stdout', 'started\n');
    stopped.controller.abort();
    expect((await stopped.pending)!.exitCode).toBe(130);
    for (const { wire } of [late, stopped]) {
      for (let i = 0; i < 30; i++) wire.sendChunk('stdout', Buffer.from(`in flight ${i}\n`));
      wire.end(130, { stderr: 'toolwire: cancelled by stop\n' });
    }
    host.send({ type: 'output', id: 'no-such-call', stream: 'stdout', seq: 0, data: 'who?' });
    const dropped = (e: { msg?: unknown }): boolean => /for (an unknown or settled call|a call this server ended) dropped/.test(String(e.msg));
    const idOf = (e: { obj: unknown }): string => (e.obj as { id: string }).id;
    await waitFor(() => entries.some((e) => dropped(e) && idOf(e) === 'no-such-call'), 'the unknown id warned');
    expect(entries.filter((e) => e.level === 'warn' && dropped(e)).map(idOf)).toEqual([late.wire.id, stopped.wire.id, 'no-such-call']);
    for (const { wire } of [late, stopped]) expect(entries.filter((e) => e.level === 'debug' && dropped(e) && idOf(e) === wire.id)).toHaveLength(30);
    // The result was the host's last frame for those calls: anything after it is warned again.
    late.wire.sendChunk('stdout', Buffer.from('after the result\n'));
    await waitFor(() => entries.some((e) => e.level === 'warn' && dropped(e) && idOf(e) === late.wire.id), 'a chunk after the result warned');
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('a host that disconnects mid-stream settles its call 69 with the streamed part', async () => {
    const h = await startEndpoint();
    const host = await connect(h);
    const { pending, wire } = await start(h, host);
    await wire.write('stdout', 'before the crash\n');
    await waitFor(() => h.router.hosts()[0]?.inFlight === 1, 'call pending');
    host.ws.terminate();
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture.stdout)).toBe('before the crash\n');
  });
});

describe('binary output frames', () => {
  it('a binary frame with an unknown stream or no bytes fails the call it names 76; one naming no call is counted; the session is kept', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger });
    const host = await connect(h);
    const frame = (id: string, stream: number, data: string): Buffer => {
      const f = encodeOutputFrame(id, 'stdout', 0, [Buffer.from(data || 'x')], Math.max(1, data.length));
      f[1] = stream;
      return data === '' ? f.subarray(0, f.length - 1) : f;
    };
    const first = await start(h, host);
    host.sendBinary(frame(first.wire.id, 3, 'x'));
    expect(text((await first.pending)!.stderr)).toMatch(/wrong-shape frame: binary output frame: unknown stream 3/);
    const second = await start(h, host);
    host.sendBinary(frame(second.wire.id, 1, ''));
    expect(text((await second.pending)!.stderr)).toMatch(/binary output frame: empty chunk/);
    host.sendBinary(Buffer.from([0x02, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x61, 0x62]));
    await waitFor(() => entries.some((e) => /unknown kind 2/.test(JSON.stringify(e.obj))), 'the unknown kind logged');
    expect(host.ws.readyState).toBe(WebSocket.OPEN);
    const third = await start(h, host);
    await third.wire.write('stdout', 'still fine\n');
    third.wire.end(0);
    expect(text((await third.pending)!.stdout)).toBe('still fine\n');
  });

  it('a binary frame on a protocol-1 session closes it 1003, as before (its calls settle 76)', async () => {
    const h = await startEndpoint();
    const host = await connect(h, { v1: true });
    const { pending, wire } = await start(h, host);
    const closed = new Promise<number>((resolve) => host.ws.once('close', (code) => resolve(code)));
    host.sendBinary(encodeOutputFrame(wire.id, 'stdout', 0, [Buffer.from('x')], 1));
    expect(await closed).toBe(1003);
    expect((await pending)!.exitCode).toBe(76);
  });
});

describe('progress', () => {
  it('passes a progress message to the call (RoutedCall.onProgress), drops one for an unknown call, survives a throwing consumer, and faults it on a v1 session', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger });
    const host = await connect(h);
    const notes: (string | undefined)[] = [];
    const { pending, wire } = await start(h, host, { onProgress: (m) => void notes.push(m) });
    host.send({ type: 'progress', id: wire.id, message: 'step 1' });
    host.send({ type: 'progress', id: wire.id });
    host.send({ type: 'progress', id: 'no-such-call', message: 'who?' });
    await waitFor(() => notes.length === 2, 'both progress messages');
    expect(notes).toEqual(['step 1', undefined]);
    await waitFor(() => entries.some((e) => e.msg === 'progress for an unknown or settled call dropped'), 'the unknown one logged');
    wire.end(0, { stdout: 'ok' });
    expect(text((await pending)!.stdout)).toBe('ok');
    const throwing = await start(h, host, {
      onProgress: () => {
        throw new Error('consumer bug');
      },
    });
    host.send({ type: 'progress', id: throwing.wire.id, message: 'a' });
    host.send({ type: 'progress', id: throwing.wire.id, message: 'b' });
    throwing.wire.end(0, { stdout: 'still ok' });
    expect(text((await throwing.pending)!.stdout)).toBe('still ok');
    expect(entries.filter((e) => e.msg === 'progress consumer threw; the call goes on')).toHaveLength(1);
    const v1 = await connect(h, { v1: true });
    const old = await start(h, v1);
    v1.send({ type: 'progress', id: old.wire.id, message: 'x' });
    expect(text((await old.pending)!.stderr)).toMatch(/progress on a protocol 1 connection/);
  });
});
