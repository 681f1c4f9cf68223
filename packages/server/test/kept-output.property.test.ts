/**
 * The server's capture of one streamed stream (`KeptStream`): byte-identical to the head + tail
 * buffer the host uses (`HeadTailBuffer`, the same cap and marker), across its moves from chunks to
 * one growable buffer (past `WHOLE_FROM`) and back to chunks (past its cap).
 */
import { HeadTailBuffer } from '@toolwire/protocol';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { KeptStream, WHOLE_FROM } from '../src/session/kept-output.js';

const KiB = 1024;
/** Random bytes, one in 16 a newline (the marker counts lines); chunks are copies of slices of it. */
const POOL = Buffer.alloc(1024 * KiB);
for (let i = 0; i < POOL.length; i++) POOL[i] = (i * 2654435761) >>> 24 < 16 ? 0x0a : (i * 40503) & 0xff;

const chunkOf = (size: number, at: number): Buffer => {
  const start = at % (POOL.length - size);
  return Buffer.from(POOL.subarray(start, start + size));
};

/** Push `sizes` into a KeptStream and a HeadTailBuffer of the same cap; both results. */
function both(capBytes: number, sizes: number[]): { kept: Uint8Array; reference: Uint8Array } {
  const kept = new KeptStream(capBytes);
  const head = Math.floor(capBytes / 2);
  const reference = new HeadTailBuffer(head, capBytes - head);
  sizes.forEach((size, i) => {
    const chunk = chunkOf(size, i * 7919);
    reference.push(chunk);
    kept.push(chunk);
  });
  return { kept: kept.bytes('stdout'), reference: reference.bytes('stdout') };
}

// Sizes: mostly frames (up to 300 KiB), some small pieces (gathered while the stream is chunks).
// Unbiased: fast-check's default bias towards small values would rarely pass WHOLE_FROM.
const size = fc.oneof(fc.noBias(fc.integer({ min: 1, max: 4 * KiB })), fc.noBias(fc.integer({ min: 4 * KiB, max: 300 * KiB })));
// Caps around the sizes that matter: below WHOLE_FROM (never whole), and above it (whole, then maybe past the cap).
const cap = fc.oneof(fc.noBias(fc.integer({ min: 0, max: WHOLE_FROM })), fc.noBias(fc.integer({ min: WHOLE_FROM, max: 3 * WHOLE_FROM })));

describe('KeptStream', () => {
  it('property: the capture equals the head + tail buffer of the same cap, whichever forms the stream went through', () => {
    fc.assert(
      fc.property(cap, fc.array(size, { minLength: 1, maxLength: 40, size: 'max' }), (capBytes, sizes) => {
        const { kept, reference } = both(capBytes, sizes);
        expect(Buffer.from(kept).equals(Buffer.from(reference))).toBe(true);
      }),
      { numRuns: 80 },
    );
  });

  it('keeps a stream within its cap whole past WHOLE_FROM, and moves it back to head + marker + tail past the cap', () => {
    const cap = 2 * WHOLE_FROM;
    const within = both(cap, Array(7).fill(256 * KiB) as number[]); // 1.75 MiB: whole
    expect(within.kept.length).toBe(7 * 256 * KiB);
    expect(Buffer.from(within.kept).equals(Buffer.from(within.reference))).toBe(true);
    const past = both(cap, Array(12).fill(256 * KiB) as number[]); // 3 MiB: capped
    expect(Buffer.from(past.kept).toString('latin1')).toContain('[... stdout truncated: 3145728 bytes / ');
    expect(Buffer.from(past.kept).equals(Buffer.from(past.reference))).toBe(true);
  });

  it('leaves a capture it handed out unchanged while more bytes arrive, within the cap and past it', () => {
    const stream = new KeptStream(2 * WHOLE_FROM);
    const chunks = Array.from({ length: 12 }, (_, i) => chunkOf(200 * KiB, i * 104729));
    const seen: { bytes: Uint8Array; copy: Buffer }[] = [];
    for (const chunk of chunks) {
      stream.push(chunk);
      const bytes = stream.bytes('stdout');
      seen.push({ bytes, copy: Buffer.from(bytes) });
    }
    for (const { bytes, copy } of seen) expect(Buffer.from(bytes).equals(copy)).toBe(true);
    expect(Buffer.from(seen[8]!.bytes).equals(Buffer.concat(chunks.slice(0, 9)))).toBe(true);
  });

  it.each([
    ['its first size', 0],
    ['it later', 1],
  ])('goes on as chunks when the growable buffer cannot get %s (no memory to commit), the capture unchanged', (_, failAfter) => {
    const proto = ArrayBuffer.prototype as unknown as { resize: (this: ArrayBuffer, n: number) => void };
    const real = proto.resize;
    let calls = 0;
    const resize = vi.spyOn(proto, 'resize').mockImplementation(function (this: ArrayBuffer, n: number) {
      if (++calls > failAfter) throw new RangeError('Array buffer allocation failed');
      real.call(this, n);
    });
    try {
      for (const count of [12, 20]) {
        calls = 0;
        const { kept, reference } = both(4 * WHOLE_FROM, Array(count).fill(256 * KiB) as number[]);
        expect(Buffer.from(kept).equals(Buffer.from(reference))).toBe(true);
        expect(calls).toBe(failAfter + 1); // one failure, then no more tries
      }
    } finally {
      resize.mockRestore();
    }
  });
});
