import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countNewlines } from '../src/newlines.js';

/** The plain definition: one pass over every byte. */
function reference(bytes: Uint8Array): number {
  let n = 0;
  for (const b of bytes) if (b === 0x0a) n++;
  return n;
}

/** Bytes where a newline is common (so lane counters fill up), at any offset of a larger buffer. */
const bytesWithNewlines = (maxLength: number) =>
  fc.tuple(fc.nat({ max: 63 }), fc.array(fc.oneof(fc.constant(0x0a), fc.integer({ min: 0, max: 255 })), { maxLength })).map(([offset, values]) => {
    const backing = new Uint8Array(offset + values.length + 7).fill(0x0a); // newlines around the view must not count
    backing.set(values, offset);
    return backing.subarray(offset, offset + values.length);
  });

describe('countNewlines', () => {
  it('counts every 0x0a byte of any bytes, short or long, at any offset (same as a byte loop)', () => {
    fc.assert(
      fc.property(bytesWithNewlines(5000), (bytes) => {
        expect(countNewlines(bytes)).toBe(reference(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('counts inputs longer than one 64 KiB block and runs of more than 255 newlines per lane', () => {
    for (const length of [1024, 4095, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 300_001]) {
      const all = new Uint8Array(length).fill(0x0a);
      expect(countNewlines(all)).toBe(length);
      const none = new Uint8Array(length).fill(0x0b);
      expect(countNewlines(none)).toBe(0);
      const log = Buffer.from('a line of build log text, 0123456789\n'.repeat(Math.ceil(length / 37))).subarray(0, length);
      expect(countNewlines(log)).toBe(reference(log));
    }
  });
});
