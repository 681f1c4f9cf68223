/**
 * `output.json` of a big capture is built from the capture's bytes (`json-bytes.ts`, `outputBytes`)
 * rather than by `JSON.stringify` of decoded strings: the file must be the same bytes either way.
 */
import { isUtf8 } from 'node:buffer';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonStringLength, writeJsonString } from '../src/executor/json-bytes.js';
import { BYTES_FROM, DiskRecord, outputBytes } from '../src/executor/record.js';

/** The JSON string literal of `bytes` as `JSON.stringify` makes it, UTF-8 encoded. */
const reference = (bytes: Uint8Array): Buffer => Buffer.from(JSON.stringify(Buffer.from(bytes).toString('utf8')));

function escaped(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(jsonStringLength(bytes) + 3, 0xee);
  const end = writeJsonString(bytes, out, 1);
  expect(end).toBe(out.length - 2); // exactly the length it said, nothing written around it
  expect(out[0]).toBe(0xee);
  expect(out[end]).toBe(0xee);
  return out.subarray(1, end);
}

/** Text with every kind of byte JSON escapes, and multi-byte characters (2, 3 and 4 bytes in UTF-8). */
const texty = fc.string({ unit: fc.constantFrom('a', ' ', '"', '\\', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u001f', '\u007f', 'é', '€', '\u2028', '😀', '/') });

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

describe('output.json from bytes', () => {
  it('escapes valid UTF-8 byte by byte into exactly what JSON.stringify of the decoded text gives', () => {
    fc.assert(
      fc.property(fc.oneof(texty, fc.string({ unit: 'binary' })), (text) => {
        const bytes = Buffer.from(text, 'utf8');
        expect(escaped(bytes).equals(reference(bytes))).toBe(true);
      }),
      { numRuns: 500 },
    );
    const every = Buffer.from(Array.from({ length: 128 }, (_, b) => b));
    expect(escaped(every).equals(reference(every))).toBe(true);
  });

  it('splices the streams in at their keys, whatever the fields before them hold', () => {
    fc.assert(
      fc.property(texty, texty, fc.option(texty, { nil: undefined }), fc.boolean(), (stdout, stderr, trace, both) => {
        const doc = {
          id: 'c1',
          wireId: trace === undefined ? undefined : `w\n  "stdout": ""${trace}`,
          tracestate: trace,
          stdout: '',
          stderr: both ? '' : stderr,
          exitCode: 0,
          failure: trace === undefined ? undefined : { stdout: '', text: trace },
        };
        const text = `${JSON.stringify(doc, null, 2)}\n`;
        const expected = `${JSON.stringify({ ...doc, stdout, stderr }, null, 2)}\n`;
        const got = outputBytes(text, Buffer.from(stdout), both ? Buffer.from(stderr) : undefined);
        expect(got.toString('utf8')).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('writes a capture over the threshold into the same output.json as one under it', async () => {
    root = await mkdtemp(join(tmpdir(), 'toolwire-bytes-'));
    const record = new DiskRecord(root);
    try {
      const line = Buffer.from('build step 7: "ok" \\ \t é € 😀 \u0001\r\n');
      const big = Buffer.alloc(BYTES_FROM + 17);
      for (let i = 0; i < big.length; i += line.length) line.copy(big, i);
      const text = big.subarray(0, big.lastIndexOf(0x0a) + 1); // whole lines: valid UTF-8
      expect(isUtf8(text)).toBe(true);
      const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
      const cases = [
        { stdout: text, stderr: Buffer.from('warn: "x"\n') },
        { stdout: binary, stderr: text }, // stdout stays {base64}, stderr spliced
        { stdout: text, stderr: text },
      ];
      for (const [i, streams] of cases.entries()) {
        const capture = { ...streams, exitCode: 3 };
        await record.writeOutput('a', `big${i}`, capture, new Date(0), new Date(1000), false, { wireId: 'w1', traceparent: '00-x' });
        const file = await readFile(join(root, 'a', `big${i}`, 'output.json'), 'utf8');
        const recorded = (b: Buffer) => (isUtf8(b) ? b.toString('utf8') : { base64: b.toString('base64') });
        const expected = {
          id: `big${i}`,
          wireId: 'w1',
          traceparent: '00-x',
          stdout: recorded(streams.stdout),
          stderr: recorded(streams.stderr),
          exitCode: 3,
          startedAt: new Date(0).toISOString(),
          endedAt: new Date(1000).toISOString(),
        };
        expect(file).toBe(`${JSON.stringify(expected, null, 2)}\n`);
      }
    } finally {
      await record.close();
    }
  });
});
