import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromWire } from '../src/bytes.js';

describe('fromWire', () => {
  it('gives exactly the UTF-8 bytes of any text: ASCII (copied as Latin-1), other Unicode, lone surrogates', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary-ascii' }),
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)) }),
    );
    fc.assert(
      fc.property(text, (s) => {
        expect(Buffer.from(fromWire(s))).toEqual(Buffer.from(s, 'utf8'));
      }),
      { numRuns: 2000 },
    );
  });
});
