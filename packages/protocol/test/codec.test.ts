import { describe, expect, it } from 'vitest';
import { decodeHostMessage, decodeServerMessage, encodeMessage, checkToolSpec } from '@toolwire/protocol';

describe('decodeHostMessage', () => {
  it('returns a typed message for a valid result frame', () => {
    const frame = encodeMessage({ type: 'result', id: 'a1', stdout: 'hi', stderr: '', exitCode: 0 });
    expect(decodeHostMessage(Buffer.from(frame))).toEqual({
      ok: true,
      message: { type: 'result', id: 'a1', stdout: 'hi', stderr: '', exitCode: 0 },
    });
  });

  it('refuses a non-JSON frame as fatal with close 1002', () => {
    const decoded = decodeHostMessage('{nope');
    expect(decoded).toMatchObject({ ok: false, error: { fatal: true, closeCode: 1002 } });
  });

  it('refuses a binary frame as fatal with close 1003', () => {
    expect(decodeHostMessage(Buffer.from([1, 2, 3]), true)).toMatchObject({ ok: false, error: { fatal: true, closeCode: 1003 } });
  });

  it('refuses a wrong-shape frame as non-fatal and names the call it mentions', () => {
    const decoded = decodeHostMessage(JSON.stringify({ type: 'result', id: 'c7', stdout: 1 }));
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.error.fatal).toBe(false);
    expect(decoded.error.id).toBe('c7');
    expect(decoded.error.reason).toMatch(/^result: /);
  });

  it('refuses unknown types, arrays and primitives without throwing', () => {
    for (const frame of ['[]', '1', 'null', '"x"', '{"type":"toString"}', '{"type":"__proto__"}', '{}']) {
      const decoded = decodeHostMessage(frame);
      expect(decoded.ok).toBe(false);
    }
  });

  it('refuses unknown keys, including __proto__', () => {
    const decoded = decodeHostMessage('{"type":"hello","protocol":1,"__proto__":{"polluted":true}}');
    expect(decoded.ok).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses exit codes outside 0-255', () => {
    expect(decodeHostMessage('{"type":"result","id":"x","stdout":"","stderr":"","exitCode":256}').ok).toBe(false);
    expect(decodeHostMessage('{"type":"result","id":"x","stdout":"","stderr":"","exitCode":-1}').ok).toBe(false);
  });
});

describe('decodeServerMessage', () => {
  it('accepts call and cancel frames and refuses host-only types', () => {
    const call = { type: 'call', id: '1', tool: 'echo', input: { a: 1 }, workspace: '/w', agent: 'a', deadlineMs: 500 };
    expect(decodeServerMessage(JSON.stringify(call))).toEqual({ ok: true, message: call });
    expect(decodeServerMessage('{"type":"cancel","id":"1","reason":"stop"}').ok).toBe(true);
    expect(decodeServerMessage('{"type":"hello","protocol":1}').ok).toBe(false);
  });
});

describe('checkToolSpec', () => {
  it('accepts a well-formed tool and explains a malformed one', () => {
    expect(checkToolSpec({ name: 'ls', inputSchema: { type: 'object' } })).toBeUndefined();
    expect(checkToolSpec({ name: 'ls' })).toMatch(/inputSchema/);
    expect(checkToolSpec({ name: 'ls', inputSchema: {}, extra: 1 })).toMatch(/additional/);
  });
});

describe('result streams marked base64', () => {
  const frame = (stdout: string) => JSON.stringify({ type: 'result', id: 'b1', stdout, stdoutEncoding: 'base64', stderr: '', exitCode: 0 });

  it('accept strict base64', () => {
    expect(decodeHostMessage(frame(Buffer.from([0xff, 0, 1]).toString('base64'))).ok).toBe(true);
    expect(decodeHostMessage(frame('')).ok).toBe(true);
  });

  it('check a 16 MiB stream without throwing', () => {
    const big = Buffer.alloc(12 * 1024 * 1024, 0xff).toString('base64');
    expect(decodeHostMessage(frame(big)).ok).toBe(true);
    expect(decodeHostMessage(frame(`${big}!`)).ok).toBe(false);
  });

  it('refuse text that is not base64, naming the call', () => {
    for (const bad of ['!!!notbase64$$', 'ab=c', 'YQ==YQ==', 'a b']) {
      const decoded = decodeHostMessage(frame(bad));
      expect(decoded).toMatchObject({ ok: false, error: { fatal: false, id: 'b1' } });
    }
  });
});
