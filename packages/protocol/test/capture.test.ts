import { describe, expect, it } from 'vitest';
import { HeadTailBuffer, appendReason, failureCapture, fromWire, headTail, toWire, utf8 } from '@toolwire/protocol';
import { countLines } from '../src/capture.js';

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

describe('wire bytes', () => {
  it('round-trip valid UTF-8 as text and anything else as base64', () => {
    expect(toWire(utf8('héllo'))).toEqual({ text: 'héllo' });
    const binary = new Uint8Array([0xff, 0x00, 0xc3]);
    const wire = toWire(binary);
    expect(wire.encoding).toBe('base64');
    expect(Buffer.from(fromWire(wire.text, wire.encoding))).toEqual(Buffer.from(binary));
  });
});

describe('failureCapture', () => {
  it('keeps partial output and ends stderr with one toolwire reason line', () => {
    const capture = failureCapture('deadline', 'deadline of 500 ms exceeded', { stdout: utf8('part'), stderr: utf8('warn') });
    expect(capture.exitCode).toBe(124);
    expect(capture.failure).toBe('deadline');
    expect(text(capture.stdout)).toBe('part');
    expect(text(capture.stderr)).toBe('warn\ntoolwire: deadline of 500 ms exceeded\n');
  });

  it('does not double a newline already there', () => {
    expect(text(appendReason(utf8('x\n'), 'r'))).toBe('x\ntoolwire: r\n');
  });
});

describe('headTail', () => {
  it('keeps head and tail with the marker line of DESIGN §3', () => {
    const line = 'abcdefghi\n'; // 10 bytes
    const bytes = utf8(line.repeat(2000)); // 20000 bytes, 2000 lines
    const out = text(headTail(bytes, 30, 20, 'stdout'));
    expect(out).toBe(`${line.repeat(3)}[... stdout truncated: 20000 bytes / 2000 lines total; showing the first 30 and last 20 bytes ...]\n${line.repeat(2)}`);
  });

  it('returns short streams unchanged', () => {
    const bytes = utf8('short');
    expect(headTail(bytes, 3, 3, 'stdout')).toBe(bytes);
  });

  it('counts a final unterminated line', () => {
    expect(countLines(utf8('a\nb'))).toBe(2);
    expect(countLines(utf8(''))).toBe(0);
  });
});

describe('HeadTailBuffer', () => {
  it('matches headTail for any chunking', () => {
    const whole = utf8(Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n'));
    for (const size of [1, 7, 64, 4096]) {
      const buf = new HeadTailBuffer(100, 50);
      for (let i = 0; i < whole.length; i += size) buf.push(whole.subarray(i, i + size));
      expect(text(buf.bytes('stdout'))).toBe(text(headTail(whole, 100, 50, 'stdout')));
      expect(buf.totalBytes).toBe(whole.length);
    }
  });

  it('keeps everything when under the cap', () => {
    const buf = new HeadTailBuffer(10, 10);
    buf.push(utf8('abc'));
    buf.push(utf8('def'));
    expect(text(buf.bytes('stdout'))).toBe('abcdef');
  });

  it('throws RangeError on bad bounds', () => {
    expect(() => new HeadTailBuffer(-1, 0)).toThrow(RangeError);
  });
});
