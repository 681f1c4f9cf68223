import { outputFrameHeaderBytes } from '@toolwire/protocol';
import * as ws from 'ws';
import { describe, expect, it } from 'vitest';
import { FRAME_WIRE_BYTES, frameDataBytes } from '../src/calls/output-link.js';

/** ws's own frame builder (exported by ws, not declared by @types/ws). */
const { Sender } = ws as unknown as { Sender: { frame(data: Buffer, options: Record<string, unknown>): Buffer[] } };

/** Bytes ws puts on the wire for one masked (client) binary frame of `payload` bytes. */
function wireBytes(payload: number): number {
  const options = { fin: true, mask: true, opcode: 2, readOnly: false, rsv1: false, maskBuffer: Buffer.alloc(4) };
  return Sender.frame(Buffer.alloc(payload), options).reduce((n, part) => n + part.length, 0);
}

describe('frameDataBytes', () => {
  it('fills a full chunk frame to exactly one 64 KiB socket read on the wire, whatever the call id', () => {
    for (const id of ['a', 'Vx3kT9qLm2Zr0', 'Vx3kT9qLm2Zrzzz', 'x'.repeat(512)]) {
      const header = outputFrameHeaderBytes(id);
      const data = frameDataBytes(256 * 1024, header);
      expect(wireBytes(header + data)).toBe(FRAME_WIRE_BYTES);
    }
  });

  it('keeps a server limit below one read as it is', () => {
    expect(frameDataBytes(16 * 1024, outputFrameHeaderBytes('c1'))).toBe(16 * 1024);
    expect(frameDataBytes(1, outputFrameHeaderBytes('c1'))).toBe(1);
  });
});
