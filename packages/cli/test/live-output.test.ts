/** `LivePrinter`: the CLI side of live output, fed notifications directly (the whole path is in test/live-output.test.ts). */
import { describe, expect, it } from 'vitest';
import { HIGH_WATER_BYTES, LivePrinter } from '../src/caller/live-output.js';
import { testIO } from './helpers/cli-io.js';

const output = (seq: number, data: string, stream = 'stdout', encoding?: string) => ({
  method: 'notifications/toolwire/output',
  params: { stream, seq, data, ...(encoding && { encoding }) },
});

describe('LivePrinter', () => {
  it('writes chunks to stdout and stderr in order, decoding base64, and is complete when the result counts them all', async () => {
    const io = testIO({});
    const live = new LivePrinter(io);
    void live.take(output(0, 'a\n'));
    void live.take(output(1, Buffer.from([0xff, 0x0a]).toString('base64'), 'stderr', 'base64'));
    void live.take(output(2, 'b\n'));
    void live.take({ method: 'notifications/progress', params: { progress: 1 } });
    await live.flush();
    expect(io.out()).toBe('a\nb\n');
    expect(io.err()).toBe('\ufffd\n'); // the 0xff byte, written as is, read back as UTF-8
    expect(live.complete({ _meta: { 'toolwire/output': { chunks: 3 } } })).toBe(true);
    expect(live.complete({ _meta: { 'toolwire/output': { chunks: 4 } } })).toBe(false);
    expect(live.complete({})).toBe(false);
  });

  it('is not complete after a gap in seq (the capture is printed then)', async () => {
    const live = new LivePrinter(testIO({}));
    void live.take(output(0, 'a'));
    void live.take(output(2, 'c'));
    await live.flush();
    expect(live.complete({ _meta: { 'toolwire/output': { chunks: 2 } } })).toBe(false);
  });

  it('ignores output notifications of the wrong shape', async () => {
    const io = testIO({});
    const live = new LivePrinter(io);
    expect(live.take({ method: 'notifications/toolwire/output', params: { stream: 'stdin', seq: 0, data: 'x' } })).toBeUndefined();
    expect(live.take({ method: 'notifications/toolwire/output', params: { stream: 'stdout', seq: 'zero', data: 'x' } })).toBeUndefined();
    await live.flush();
    expect(io.out()).toBe('');
    expect(live.chunks).toBe(0);
  });

  it('asks the reader to pause while more than the high-water mark waits to be written', async () => {
    const live = new LivePrinter(testIO({}));
    const big = 'x'.repeat(HIGH_WATER_BYTES / 2 + 1);
    expect(live.take(output(0, big))).toBeUndefined();
    const pause = live.take(output(1, big));
    expect(pause).toBeInstanceOf(Promise);
    await pause;
  });
});
