/**
 * Property (fast-check): pipe reads copied into a streaming call's output (`StreamingOutput.copy`,
 * the reads' buffer reused at once) leave as `output` frames built in the pooled frame buffers —
 * in place or copied when the window splits them — and the chunks plus the remainder are exactly
 * what was read, in order, whatever the read sizes, the interleaving of stdout and stderr, the
 * credit and the time the connection takes to write each frame (a frame buffer is reused only
 * once its frame was written).
 */
import { decodeOutputFrame } from '@toolwire/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputChannel } from '../src/calls/output-channel.js';
import type { StreamingOutput } from '../src/calls/streaming-output.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
/** Bytes the reads take their data from (at an offset of their own, so no two reads look alike). */
const PATTERN = Buffer.from(Array.from({ length: 9300 }, (_, i) => (i * 7 + (i >> 8)) & 0xff));
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

type Op = { kind: 'read'; fd: 1 | 2; size: number; seed: number } | { kind: 'turn' } | { kind: 'write'; frames: number } | { kind: 'credit'; bytes: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('read' as const), fd: fc.constantFrom<1 | 2>(1, 2), size: fc.integer({ min: 1, max: 9000 }), seed: fc.nat(255) }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('write' as const), frames: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('credit' as const), bytes: fc.integer({ min: 1, max: 20_000 }) }) },
);

describe('StreamingOutput.copy (pipe reads into pooled frame buffers)', () => {
  it('chunks plus the remainder equal the reads, in order, whatever the sizes, interleaving, credit and write timing (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 12_000 }),
        fc.integer({ min: 16, max: 5000 }),
        fc.boolean(),
        async (ops, windowBytes, chunkBytes, stop) => {
          // Frames the connection has not written yet: their bytes are read when "written", as a socket would.
          const queued: { frame: string | Uint8Array; sent?: () => void }[] = [];
          const chunks: { stream: string; seq: number; bytes: Buffer }[] = [];
          const write = (n: number) => {
            for (const { frame, sent } of queued.splice(0, n)) {
              if (typeof frame === 'string') throw new Error(`a text frame: ${frame}`);
              const d = decodeOutputFrame(Buffer.from(frame));
              if (!d.ok) throw new Error(d.error.reason);
              chunks.push({ stream: d.message.stream, seq: d.message.seq, bytes: Buffer.from(d.message.bytes) });
              sent?.();
            }
          };
          const channel = new OutputChannel(
            (frame, sent) => {
              queued.push(sent === undefined ? { frame } : { frame, sent });
              return true;
            },
            { windowBytes, maxChunkBytes: chunkBytes },
            1024 * 1024,
            1024 * 1024,
            quiet,
          );
          const output = channel.open('call-1') as StreamingOutput;
          const read = Buffer.alloc(9000); // one buffer for every read, as the host's pipe reader
          const wrote: Record<'stdout' | 'stderr', Buffer[]> = { stdout: [], stderr: [] };
          for (const o of ops) {
            if (o.kind === 'read') {
              PATTERN.copy(read, 0, o.seed, o.seed + o.size);
              const stream = o.fd === 1 ? 'stdout' : 'stderr';
              wrote[stream].push(Buffer.from(read.subarray(0, o.size)));
              output.copy(stream, read.subarray(0, o.size));
              read.fill(0xee); // the reader reuses its buffer at once
            } else if (o.kind === 'turn') await turn();
            else if (o.kind === 'write') write(o.frames);
            else channel.credit({ type: 'credit', id: 'call-1', bytes: o.bytes });
          }
          if (stop) output.end(); // a stop: what waits goes into the result
          await turn();
          write(queued.length);
          const rest = output.take();
          write(queued.length);
          expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
          expect(Math.max(0, ...chunks.map((c) => c.bytes.length))).toBeLessThanOrEqual(chunkBytes);
          const streamed = (s: string) => Buffer.concat(chunks.filter((c) => c.stream === s).map((c) => c.bytes));
          expect(Buffer.concat([streamed('stdout'), Buffer.from(rest.stdout)]).equals(Buffer.concat(wrote.stdout))).toBe(true);
          expect(Buffer.concat([streamed('stderr'), Buffer.from(rest.stderr)]).equals(Buffer.concat(wrote.stderr))).toBe(true);
          expect(output.streamed?.chunks ?? 0).toBe(chunks.length);
        },
      ),
      { numRuns: 200 },
    );
  });
});
