/** Protocol 2 (DESIGN §5, "Live output"): output, credit, welcome.output, result.streamed; version helpers. */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, SUBPROTOCOLS, decodeHostMessage, decodeServerMessage, encodeMessage, subprotocolOf, versionOfSubprotocol } from '@toolwire/protocol';

describe('protocol versions', () => {
  it('offers every version newest first and maps names both ways; unknown names are not ours', () => {
    expect(PROTOCOL_VERSION).toBe(2);
    expect(SUBPROTOCOLS).toEqual(['toolwire.v2', 'toolwire.v1']);
    expect(subprotocolOf(1)).toBe('toolwire.v1');
    expect(versionOfSubprotocol('toolwire.v2')).toBe(2);
    expect(versionOfSubprotocol('toolwire.v1')).toBe(1);
    for (const name of ['toolwire.v3', 'toolwire.v0', 'toolwire.v01', 'toolwire.v1 ', 'other', '', undefined]) expect(versionOfSubprotocol(name)).toBeUndefined();
  });
});

describe('output', () => {
  it('decodes a text chunk and a base64 chunk', () => {
    const text = { type: 'output', id: 'c1', stream: 'stdout', seq: 0, data: 'line\n' } as const;
    expect(decodeHostMessage(encodeMessage(text))).toEqual({ ok: true, message: text });
    const bin = { type: 'output', id: 'c1', stream: 'stderr', seq: 1, data: '/w==', encoding: 'base64' } as const;
    expect(decodeHostMessage(encodeMessage(bin))).toEqual({ ok: true, message: bin });
  });

  it.each([
    ['a negative seq', { seq: -1 }],
    ['a fractional seq', { seq: 1.5 }],
    ['an unknown stream', { stream: 'stdin' }],
    ['empty data', { data: '' }],
    ['bad base64', { data: 'not base64!', encoding: 'base64' }],
    ['an unknown key', { extra: 1 }],
  ])('refuses %s as a wrong-shape frame naming the call (non-fatal)', (_label, change) => {
    const decoded = decodeHostMessage(JSON.stringify({ type: 'output', id: 'c9', stream: 'stdout', seq: 0, data: 'x', ...change }));
    expect(decoded).toMatchObject({ ok: false, error: { fatal: false, id: 'c9', type: 'output' } });
  });
});

describe('result.streamed', () => {
  it('accepts counts and refuses a partial or negative one', () => {
    const ok = { type: 'result', id: 'r', stdout: '', stderr: '', exitCode: 0, streamed: { stdout: 10, stderr: 0, chunks: 2 } };
    expect(decodeHostMessage(JSON.stringify(ok)).ok).toBe(true);
    expect(decodeHostMessage(JSON.stringify({ ...ok, streamed: { stdout: 1, stderr: 0 } })).ok).toBe(false);
    expect(decodeHostMessage(JSON.stringify({ ...ok, streamed: { stdout: -1, stderr: 0, chunks: 0 } })).ok).toBe(false);
  });
});

describe('credit and welcome.output', () => {
  it('decodes credit and refuses zero bytes', () => {
    expect(decodeServerMessage(JSON.stringify({ type: 'credit', id: 'c', bytes: 65536 })).ok).toBe(true);
    expect(decodeServerMessage(JSON.stringify({ type: 'credit', id: 'c', bytes: 0 })).ok).toBe(false);
  });

  it('decodes a v2 welcome with an output window, and a v1 welcome without one', () => {
    const v1 = { type: 'welcome', protocol: 1, host: 'h', heartbeatMs: 10, limits: { maxPayload: 1, maxInFlight: 1, maxTools: 0 } };
    expect(decodeServerMessage(JSON.stringify(v1)).ok).toBe(true);
    expect(decodeServerMessage(JSON.stringify({ ...v1, protocol: 2, output: { windowBytes: 1048576, maxChunkBytes: 65536 } })).ok).toBe(true);
    expect(decodeServerMessage(JSON.stringify({ ...v1, output: { windowBytes: 0, maxChunkBytes: 1 } })).ok).toBe(false);
  });
});
