/** The binary `output` frame (protocol 2, DESIGN §5 "Live output"): layout, round trip, refusals. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_OUTPUT_FRAME_SEQ, decodeOutputFrame, encodeOutputFrame, outputFrameHeaderBytes, outputFrameInPlace } from '@toolwire/protocol';

describe('binary output frame', () => {
  it('lays out kind, stream, seq (48 bits), id length, id, then the bytes', () => {
    const frame = encodeOutputFrame('c1', 'stderr', 258, [Buffer.from('ab'), Buffer.from('c')], 3);
    expect([...frame]).toEqual([1, 2, 0, 0, 0, 0, 1, 2, 0, 2, 0x63, 0x31, 0x61, 0x62, 0x63]);
    expect(outputFrameHeaderBytes('c1')).toBe(12);
    expect(frame.byteOffset).toBe(0);
    expect(frame.buffer.byteLength).toBe(frame.length);
  });

  it('round-trips any id, stream, seq and bytes; the decoded bytes are a view of the frame', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 128 }),
        fc.constantFrom('stdout' as const, 'stderr' as const),
        fc.integer({ min: 0, max: MAX_OUTPUT_FRAME_SEQ }),
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 64 }), { minLength: 1, maxLength: 4 }),
        (id, stream, seq, parts) => {
          const n = parts.reduce((sum, p) => sum + p.length, 0);
          const frame = encodeOutputFrame(id, stream, seq, parts, n);
          const decoded = decodeOutputFrame(frame);
          expect(decoded.ok).toBe(true);
          if (!decoded.ok) return;
          expect(decoded.message).toMatchObject({ id, stream, seq });
          expect(Buffer.from(decoded.message.bytes).equals(Buffer.concat(parts))).toBe(true);
          expect(decoded.message.bytes.buffer).toBe(frame.buffer);
        },
      ),
    );
  });

  it.each([
    ['shorter than its header', Buffer.from([1, 1, 0]), undefined],
    ['unknown kind 9', Buffer.from([9, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x61, 0x62]), undefined],
    ['does not fit', Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0x61]), undefined],
    ['does not fit', Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x61]), undefined],
    ['not UTF-8', Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0x61]), undefined],
    ['unknown stream 0', Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x61, 0x62]), 'a'],
    ['empty chunk', Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x61]), 'a'],
  ])('refuses a frame whose %s, non-fatal, naming the call when it can', (why, frame, id) => {
    const decoded = decodeOutputFrame(frame);
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.error).toMatchObject({ fatal: false, type: 'output' });
    expect(decoded.error.reason).toContain(why);
    expect(decoded.error.id).toBe(id);
  });

  it('refuses an id over 128 characters', () => {
    const id = 'x'.repeat(129);
    const frame = Buffer.concat([Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 129]), Buffer.from(id), Buffer.from('a')]);
    expect(decodeOutputFrame(frame)).toMatchObject({ ok: false, error: { reason: expect.stringMatching(/129 characters/) } });
  });

  it('throws RangeError for caller misuse: empty chunk, seq out of range, bad id, parts that do not add up', () => {
    expect(() => encodeOutputFrame('c', 'stdout', 0, [], 0)).toThrow(RangeError);
    expect(() => encodeOutputFrame('c', 'stdout', -1, [Buffer.from('a')], 1)).toThrow(RangeError);
    expect(() => encodeOutputFrame('c', 'stdout', MAX_OUTPUT_FRAME_SEQ + 1, [Buffer.from('a')], 1)).toThrow(RangeError);
    expect(() => encodeOutputFrame('', 'stdout', 0, [Buffer.from('a')], 1)).toThrow(RangeError);
    expect(() => encodeOutputFrame('c', 'stdout', 0, [Buffer.from('ab')], 1)).toThrow(RangeError);
    expect(() => encodeOutputFrame('c', 'stdout', 0, [Buffer.from('ab')], 2, Buffer.alloc(12))).toThrow(RangeError);
  });

  it('encodes into the start of a given buffer: the same bytes, as a view of it', () => {
    const into = Buffer.alloc(64, 0xff);
    const frame = encodeOutputFrame('c1', 'stderr', 258, [Buffer.from('ab'), Buffer.from('c')], 3, into);
    expect(frame.equals(encodeOutputFrame('c1', 'stderr', 258, [Buffer.from('abc')], 3))).toBe(true);
    expect(frame.buffer).toBe(into.buffer);
    expect(frame.byteOffset).toBe(into.byteOffset);
    expect(into[frame.length]).toBe(0xff);
  });

  it('makes a frame in place around bytes already in a buffer: the header goes just before them, nothing else changes', () => {
    const buffer = Buffer.alloc(64, 0xff);
    buffer.write('abc', 20);
    const frame = outputFrameInPlace('c1', 'stderr', 258, buffer, 20, 23);
    expect(frame.equals(encodeOutputFrame('c1', 'stderr', 258, [Buffer.from('abc')], 3))).toBe(true);
    expect(frame.buffer).toBe(buffer.buffer);
    expect(frame.byteOffset).toBe(buffer.byteOffset + 20 - outputFrameHeaderBytes('c1'));
    expect(buffer[20 - outputFrameHeaderBytes('c1') - 1]).toBe(0xff);
    expect(buffer[23]).toBe(0xff);
    expect(() => outputFrameInPlace('c1', 'stdout', 0, buffer, 11, 12)).toThrow(RangeError); // no room for the header
    expect(() => outputFrameInPlace('c1', 'stdout', 0, buffer, 20, 20)).toThrow(RangeError); // empty chunk
    expect(() => outputFrameInPlace('c1', 'stdout', 0, buffer, 20, 65)).toThrow(RangeError); // past the buffer
    expect(() => outputFrameInPlace('', 'stdout', 0, buffer, 20, 21)).toThrow(RangeError);
  });
});
