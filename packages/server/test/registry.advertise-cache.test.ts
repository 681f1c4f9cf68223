/**
 * Identical advertise frames are decoded and examined once (registry/advertise-cache.ts), and what
 * each host gets is unchanged: its own names, its own refusals, a frame that differs by a byte
 * examined on its own, a frame that does not decode never kept.
 */
import { type Decoded, encodeMessage } from '@toolwire/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { AdvertiseCache, MAX_CACHED_ADVERTISES } from '../src/registry/advertise-cache.js';
import { prepareAdvertise } from '../src/registry/prepare.js';
import { FrameDecoder } from '../src/session/frame-decoder.js';
import type { HostFrame } from '../src/worker/jobs.js';
import { BETA_TOKEN, closeCode, helloAndAdvertise, nextFrame, rawHost, send, startEndpoint, teardown } from './endpoint.harness.js';

afterEach(teardown);

const limits = { maxSchemaBytes: 65536, maxSchemaDepth: 32, maxDescriptionChars: 4096, maxToolsPerHost: 256 };
const frame = (tools: unknown[]): Buffer => Buffer.from(encodeMessage({ type: 'advertise', tools } as never));
const READ = { name: 'read', description: 'reads a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } };

describe('AdvertiseCache', () => {
  it('keys only text frames that start as an encoded advertise', () => {
    const cache = new AdvertiseCache(1 << 20);
    expect(cache.keyOf(frame([READ]))).toBe(frame([READ]).toString('latin1'));
    expect(cache.keyOf(Buffer.from('{"type":"result","id":"1","stdout":"","stderr":"","exitCode":0}'))).toBeUndefined();
    expect(cache.keyOf(Buffer.from('{"tools":[],"type":"advertise"}'))).toBeUndefined(); // another key order: decoded as usual
    expect(cache.keyOf(Buffer.from('{"type":"advertise"'))).toBeUndefined();
  });

  it('answers the same bytes with the same frozen prepared advertise, other bytes with nothing', () => {
    const cache = new AdvertiseCache(1 << 20);
    const key = cache.keyOf(frame([READ]))!;
    const kept = cache.set(key, prepareAdvertise([READ], limits));
    expect(cache.get(cache.keyOf(frame([READ]))!)).toBe(kept);
    expect(Object.isFrozen(kept.entries)).toBe(true);
    expect(Object.isFrozen(kept.entries[0])).toBe(true);
    expect(cache.get(cache.keyOf(frame([{ ...READ, description: 'reads a file!' }]))!)).toBeUndefined();
  });

  it('forgets the least recently used frame past its bytes or its frame count', () => {
    const one = frame([READ]).length;
    const cache = new AdvertiseCache(2 * one + 10);
    const keys = ['a', 'b', 'c'].map((d) => cache.keyOf(frame([{ ...READ, description: d.repeat(1) }]))!);
    cache.set(keys[0]!, prepareAdvertise([READ], limits));
    cache.set(keys[1]!, prepareAdvertise([READ], limits));
    cache.get(keys[0]!); // a is now the most recent
    cache.set(keys[2]!, prepareAdvertise([READ], limits));
    expect(cache.get(keys[1]!)).toBeUndefined();
    expect(cache.get(keys[0]!)).toBeDefined();
    expect(cache.stats.bytes).toBeLessThanOrEqual(2 * one + 10);

    const many = new AdvertiseCache(1 << 30);
    for (let i = 0; i <= MAX_CACHED_ADVERTISES; i++) many.set(many.keyOf(frame([{ ...READ, description: String(i) }]))!, prepareAdvertise([READ], limits));
    expect(many.stats.frames).toBe(MAX_CACHED_ADVERTISES);
  });

  it('lets the frame decoder skip decoding a frame it has seen, and only that frame', () => {
    const decoder = new FrameDecoder({ limits, decodeTimeoutMs: 1000, advertises: new AdvertiseCache(1 << 20) }, {} as never);
    const prepared = (data: Buffer): unknown => {
      const decoded = decoder.decode(data, false) as Decoded<HostFrame>;
      return decoded.ok && decoded.message.type === 'advertise' ? decoded.message.prepared : decoded;
    };
    const first = prepared(frame([READ]));
    expect(prepared(frame([READ]))).toBe(first);
    expect(prepared(frame([READ, READ]))).not.toBe(first);
    const bad = Buffer.from('{"type":"advertise","tools":3}');
    expect(prepared(bad)).toMatchObject({ ok: false, error: { type: 'advertise' } });
    expect(prepared(bad)).toMatchObject({ ok: false, error: { type: 'advertise' } });
  });

  it('keeps nothing with 0 bytes', () => {
    expect(new AdvertiseCache(0).keyOf(frame([READ]))).toBeUndefined();
  });
});

describe('hosts sending the same advertise frame', () => {
  it('each get their own exposed names and refusals, from one examination', async () => {
    const h = await startEndpoint();
    const tools = [READ, { name: 'bad name', inputSchema: { type: 'object' } }];
    const a = await rawHost(h.url);
    const b = await rawHost(h.url, BETA_TOKEN);
    const first = await helloAndAdvertise(a, tools);
    const second = await helloAndAdvertise(b, tools);
    expect(first.advertised.accepted).toEqual([{ name: 'read', as: 'alpha__read' }]);
    expect(second.advertised.accepted).toEqual([{ name: 'read', as: 'beta__read' }]);
    expect(second.advertised.rejected).toEqual(first.advertised.rejected);
    expect((first.advertised.rejected as { name: string }[])[0]!.name).toBe('bad name');
    expect(h.router.tools().map((t) => t.name)).toEqual(['alpha__read', 'beta__read']);
    expect(h.router.tools()[1]!.inputSchema).toBe(h.router.tools()[0]!.inputSchema);
    expect(h.options.endpoint.session.decoder).toBeDefined();
  });

  it('gives a host whose frame differs its own examination', async () => {
    const h = await startEndpoint({ naming: 'bare' });
    const a = await rawHost(h.url);
    const b = await rawHost(h.url, BETA_TOKEN);
    await helloAndAdvertise(a, [READ]);
    // The same tool name under bare naming: beta's frame (another description) is refused for the name.
    const second = await helloAndAdvertise(b, [{ ...READ, description: 'reads another file' }]);
    expect(second.advertised.accepted).toEqual([]);
    expect((second.advertised.rejected as { reason: string }[])[0]!.reason).toMatch(/already advertised by another host/);
  });

  it('still closes 1002 for a wrong-shape advertise sent twice (errors are never kept)', async () => {
    const h = await startEndpoint();
    for (const token of [undefined, BETA_TOKEN]) {
      const ws = await rawHost(h.url, token);
      const welcome = nextFrame(ws, 'welcome');
      send(ws, { type: 'hello', protocol: 1, software: 'raw-test' });
      await welcome;
      const closed = closeCode(ws);
      ws.send('{"type":"advertise","tools":"not an array"}');
      expect(await closed).toBe(1002);
    }
  });
});
