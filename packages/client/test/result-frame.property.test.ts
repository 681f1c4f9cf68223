/**
 * Property (fast-check): the text fast path of an in-process tool's string output
 * (`encodeTextResultFrame`, no bytes made) gives exactly the frame the bytes path gives
 * (`handlerOutputToCapture` → `capCapture` → `encodeResultFrame`), or declines — for any string
 * (lone surrogates, control characters, multi-byte text), any cap and any `maxPayload`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capCapture } from '../src/calls/capture-cap.js';
import { handlerOutputToCapture } from '../src/calls/in-process.js';
import { encodeResultFrame, encodeTextResultFrame } from '../src/calls/result-frame.js';

const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }), // includes lone surrogates
  fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', 'é', '\ud83d', '\ude00', 'x'), maxLength: 200 }),
);

describe('encodeTextResultFrame (host fast path for string output)', () => {
  it('gives the same frame as the bytes path, or declines', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 1200 }), (s, capBytes, maxPayload) => {
        const fast = encodeTextResultFrame('id-1', s, capBytes, maxPayload);
        const slow = encodeResultFrame('id-1', capCapture(handlerOutputToCapture(s), capBytes), maxPayload);
        if (fast !== undefined) expect(fast).toBe(slow);
      }),
      { numRuns: 3000 },
    );
  });

  it('takes the fast path for well-formed text that fits', () => {
    expect(encodeTextResultFrame('a', '{"data":"é"}', 1024, 1024)).toBe(encodeResultFrame('a', handlerOutputToCapture('{"data":"é"}'), 1024));
    expect(encodeTextResultFrame('a', '', 1024, 1024)).toBe('{"type":"result","id":"a","stdout":"","stderr":"","exitCode":0}');
    expect(encodeTextResultFrame('a', 'x\ud800', 1024, 1024)).toBeUndefined(); // not well-formed: bytes path
    expect(encodeTextResultFrame('a', 'xxxx', 3, 1024)).toBeUndefined(); // truncated: bytes path
  });
});
