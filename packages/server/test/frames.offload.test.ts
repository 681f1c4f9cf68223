/**
 * Issue 11 §1 — frames over 256 KiB are decoded off the event loop: results arrive whole and in
 * order, an advertise of any length comes back bounded, and a frame too costly to decode is refused
 * (close 1009). The JSON scan that bounds it, on its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cutTools, scanFrame } from '../src/worker/json-scan.js';
import { MAX_FRAME_VALUES } from '../src/worker/jobs.js';
import { closeCode, helloAndAdvertise, hostWithCall, nextFrame, rawHost, routedCall, send, startEndpoint, teardown, text } from './endpoint.harness.js';

afterEach(teardown);

describe('scanFrame', () => {
  const cut = (json: string, keep: number): { json: string; left: number } => {
    const scan = scanFrame(json, keep, 1e9);
    if (!scan.ok) throw new Error('over the limit');
    const { text: out, left } = cutTools(json, scan.tools);
    return { json: out, left };
  };

  it('keeps the first entries of a top-level tools array and counts the rest, wherever the key is', () => {
    expect(cut('{"type":"advertise","tools":[{"a":1},{"b":[1,2]},"x",3,null,{}]}', 2)).toEqual({
      json: '{"type":"advertise","tools":[{"a":1},{"b":[1,2]}]}',
      left: 4,
    });
    expect(cut('{"tools" : [ 1 , 2 , 3 ] , "type":"advertise"}', 1)).toEqual({ json: '{"tools" : [ 1 ] , "type":"advertise"}', left: 2 });
    expect(cut('{"tools":[{"x":"],[{"}]}', 0)).toEqual({ json: '{"tools":[]}', left: 1 });
    expect(cut('{"tools":[1,2]}', 5)).toEqual({ json: '{"tools":[1,2]}', left: 0 });
    // Escaped keys are still "tools"; every top-level one is cut, the last one counts.
    expect(cut('{"t\\u006fols":[1,2,3],"tools":[4,5,6,7]}', 2)).toEqual({ json: '{"t\\u006fols":[1,2],"tools":[4,5]}', left: 2 });
    // Nested "tools" keys and strings holding brackets, quotes and backslashes are left alone.
    const nested = '{"type":"result","id":"a\\"b","stdout":"[{\\\\\\"tools\\":[1,2]}","stderr":"","exitCode":0,"x":{"tools":[1,2,3]}}';
    expect(cut(nested, 1)).toEqual({ json: nested, left: 0 });
  });

  it('counts values and stops past the limit, without counting the entries it cut', () => {
    expect(scanFrame('[1,2,3]', 1, 2)).toEqual({ ok: false, values: 3 });
    expect(scanFrame('{"tools":[' + Array(1_000).fill('{"a":[1,2]}').join(',') + ']}', 2, 10)).toMatchObject({ ok: true, values: 10 }); // the object, the array, and 4 per entry kept
  });
});

describe('a frame over 256 KiB', () => {
  it('is decoded off the loop: a 1 MiB result settles its call whole, and the frame behind it keeps its order', async () => {
    const h = await startEndpoint();
    const { ws, pending, id } = await hostWithCall(h);
    const second = routedCall('alpha__slow', { id: 'caller-2' });
    const secondFrame = nextFrame(ws, 'call');
    const secondPending = h.router.route(second.call);
    const secondId = (await secondFrame).id as string;
    const big = 'x'.repeat(1024 * 1024);
    send(ws, { type: 'result', id, stdout: big, stderr: '', exitCode: 0 });
    send(ws, { type: 'result', id: secondId, stdout: 'small', stderr: '', exitCode: 0 });
    const [first, after] = await Promise.all([pending, secondPending]);
    expect(first!.exitCode).toBe(0);
    expect(text(first!.stdout)).toBe(big);
    expect(text(after!.stdout)).toBe('small');
  });

  it('of 300,000 advertise entries gets a bounded reply', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    const { advertised } = await helloAndAdvertise(
      ws,
      Array.from({ length: 300_000 }, () => ({})),
    );
    expect(advertised.accepted).toEqual([]);
    expect(advertised.rejected).toHaveLength(256);
    expect(advertised.moreRejected).toBe(300_000 - 256);
  });

  it(`holding more than ${MAX_FRAME_VALUES} JSON values is refused unparsed: close 1009`, async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, []);
    const closed = closeCode(ws);
    ws.send(`{"type":"result","id":"x","stdout":"","stderr":"","exitCode":0,"junk":[${Array(MAX_FRAME_VALUES).fill('0').join(',')}]}`);
    expect(await closed).toBe(1009);
  });

  it('not decoded within frameDecodeTimeoutMs is refused: close 1009, and the host pending calls settle 76', async () => {
    const h = await startEndpoint({ frameDecodeTimeoutMs: 20 });
    const { ws, pending } = await hostWithCall(h);
    const closed = closeCode(ws);
    ws.send(`{"type":"result","id":"y","stdout":"","stderr":"","exitCode":0,"junk":[${Array(900_000).fill('{}').join(',')}]}`);
    expect(await closed).toBe(1009);
    const capture = await pending;
    expect(capture!.exitCode).toBe(76);
    expect(text(capture!.stderr)).toMatch(/refused: not decoded within 20 ms/);
  });
});
