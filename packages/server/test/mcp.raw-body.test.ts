/**
 * `readJsonBody` (`mcp/raw-body.ts`) on a real `node:http` server: the body read whole, bounded
 * (declared or streamed past the limit), UTF-8 JSON only, and a request that ends early rejected.
 */
import { type IncomingMessage, type Server, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RawBody, readJsonBody } from '../src/mcp/raw-body.js';

const LIMIT = 64;
let server: Server;
let port: number;
let outcomes: Promise<RawBody>[];

beforeEach(async () => {
  outcomes = [];
  server = createServer((req: IncomingMessage, res) => {
    const outcome = readJsonBody(req, LIMIT);
    outcomes.push(outcome);
    outcome.then(
      (raw) => {
        if (!res.destroyed) res.writeHead(raw.ok ? 200 : raw.status).end(raw.ok ? raw.text : raw.message);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Send `head` and then `chunks` (each written on its own) on a raw connection; the response text, or '' when the connection closed without one. */
function raw(head: string, chunks: (string | Buffer)[], endAfter = true): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head);
      for (const chunk of chunks) socket.write(chunk);
      if (endAfter) socket.end();
      else socket.destroy();
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(text));
  });
}

const chunked = (body: string | Buffer) => [`${Buffer.byteLength(body).toString(16)}\r\n`, body, '\r\n'];

describe('readJsonBody', () => {
  it('reads a body sent in several chunks whole', async () => {
    const reply = await raw('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n', [
      ...chunked('{"a":'),
      ...chunked('[1,2,'),
      ...chunked('"☃"]}'),
      '0\r\n\r\n',
    ]);
    expect(reply).toMatch(/^HTTP\/1\.1 200/);
    expect(await outcomes[0]).toMatchObject({ ok: true, body: { a: [1, 2, '☃'] } });
  });

  it('answers 413 without reading a body whose declared length is over the limit', async () => {
    const reply = await raw(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${LIMIT + 1}\r\nConnection: close\r\n\r\n`, []);
    expect(reply).toMatch(/^HTTP\/1\.1 413/);
    expect(reply).toContain(`must not exceed ${LIMIT} bytes`);
  });

  it('stops reading a streamed body at the limit (413; the request is destroyed)', async () => {
    await raw('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n', [...chunked('x'.repeat(LIMIT)), ...chunked('yy')]);
    expect(await outcomes[0]).toMatchObject({ ok: false, status: 413 });
  });

  it.each([
    ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 'not valid UTF-8'],
    ['not JSON', Buffer.from('{"a":'), 'not valid JSON'],
  ])('answers 400 (-32700) to a body that is %s', async (_what, body, message) => {
    const reply = await raw(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`, [body]);
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(reply).toContain(message);
    expect(await outcomes[0]).toMatchObject({ ok: false, status: 400, code: -32700 });
  });

  it('rejects when the request closes before its body ended', async () => {
    await raw('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n', ['{"a":'], false);
    await expect.poll(() => outcomes.length).toBe(1);
    await expect(outcomes[0]).rejects.toThrow();
  });
});
