/**
 * A wrong-shape `hello` or `advertise` leaves a host with no session or no tools; the host learns
 * why from the close: 1002 with the ajv reason as the close reason, at most 123 bytes (RFC 6455 §5.5).
 * Through raw sockets.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { SLOW, helloAndAdvertise, nextFrame, rawHost, routedCall, send, startEndpoint, teardown, text, waitFor } from './endpoint.harness.js';

afterEach(teardown);

/** The close code and reason the socket receives. */
function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return once(ws, 'close').then(([code, reason]) => ({ code: code as number, reason: String(reason) }));
}

describe('a wrong-shape hello or advertise closes 1002 with the ajv reason', () => {
  it('a hello with an extra top-level key: close 1002 naming the key', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    const closed = closeOf(ws);
    send(ws, { type: 'hello', protocol: 1, software: 'raw-test', extra: true });
    expect(await closed).toEqual({ code: 1002, reason: 'hello: / must NOT have additional properties ("extra")' });
    await waitFor(() => h.endpoint.sessionCount === 0, 'the session to end');
  });

  it('an advertise with an extra top-level key after a good hello: close 1002 naming the key; its pending calls settle 76', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    const frame = nextFrame(ws, 'call');
    const pending = h.router.route(routedCall('alpha__slow').call);
    await frame;
    const closed = closeOf(ws);
    send(ws, { type: 'advertise', tools: [SLOW], extra: 1 });
    expect(await closed).toEqual({ code: 1002, reason: 'advertise: / must NOT have additional properties ("extra")' });
    const capture = (await pending)!;
    expect(capture).toMatchObject({ exitCode: 76, failure: 'protocol' });
    expect(text(capture.stderr)).toMatch(/advertise: \/ must NOT have additional properties \("extra"\) \(close 1002 PROTOCOL_ERROR\)\n$/);
    await waitFor(() => h.router.tools().length === 0 && h.endpoint.sessionCount === 0, 'the session and its tools to go');
  });

  it('a long reason is cut to at most 123 bytes of UTF-8', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    const closed = closeOf(ws);
    // Ten unknown non-ASCII keys and tools that are not objects: a reason far over 123 bytes.
    const extra = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`ключ-${i}`, i]));
    send(ws, { type: 'advertise', tools: [1, 2, 3], ...extra });
    const { code, reason } = await closed;
    expect(code).toBe(1002);
    expect(reason).toMatch(/^advertise: /);
    expect(Buffer.byteLength(reason, 'utf8')).toBeLessThanOrEqual(123);
    expect(Buffer.byteLength(reason, 'utf8')).toBeGreaterThan(100);
  });

  it('other wrong-shape frames after hello still keep the session (only that frame is refused)', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await helloAndAdvertise(ws, [SLOW]);
    send(ws, { type: 'result', stdout: 1 });
    const advertised = nextFrame(ws, 'advertised');
    send(ws, { type: 'advertise', tools: [SLOW] });
    expect(await advertised).toMatchObject({ type: 'advertised', rejected: [] });
  });
});
