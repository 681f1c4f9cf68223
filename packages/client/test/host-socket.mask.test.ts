/** The host socket's masking key: all-zero only on loopback, where no intermediary can read the frames. */
import { createHash } from 'node:crypto';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { HostSocket } from '../src/connection/host-socket.js';
import { unmaskedIsSafe } from '../src/connection/masking.js';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('unmaskedIsSafe', () => {
  it('is true on loopback only: false across a network (wss: too, for a TLS-terminating proxy) or for a URL that does not parse', () => {
    for (const url of ['ws://127.0.0.1:8080/', 'ws://127.9.0.1/', 'ws://localhost:1/', 'ws://[::1]:8080/', 'wss://127.0.0.1:8443/']) {
      expect(unmaskedIsSafe(url), url).toBe(true);
    }
    for (const url of [
      'ws://example.com/',
      'ws://10.0.0.1:8080/',
      'ws://127.0.0.1.example.com/',
      'ws://[::2]/',
      'wss://example.com/',
      'wss://10.0.0.1/',
      'http://127.0.0.1/',
      'not a url',
    ]) {
      expect(unmaskedIsSafe(url), url).toBe(false);
    }
  });
});

describe('HostSocket masking', () => {
  it('sends frames with an all-zero masking key to a loopback server (the hello crosses as plain text)', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const firstFrame = new Promise<Buffer>((resolve, reject) => {
      server.once('connection', (socket: Socket) => {
        let request = Buffer.alloc(0);
        let upgraded = false;
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          request = Buffer.concat([request, chunk]);
          if (!upgraded) {
            const end = request.indexOf('\r\n\r\n');
            if (end === -1) return;
            const head = request.subarray(0, end).toString('latin1');
            const key = /^sec-websocket-key: *(.+)$/im.exec(head)![1]!.trim();
            const protocol = /^sec-websocket-protocol: *([^,\r\n]+)/im.exec(head)![1]!.trim();
            const accept = createHash('sha1')
              .update(key + WS_GUID)
              .digest('base64');
            socket.write(
              `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
            );
            upgraded = true;
            request = request.subarray(end + 4);
          }
          if (request.length >= 14) resolve(request);
        });
      });
    });
    let closed!: () => void;
    const ended = new Promise<void>((resolve) => (closed = resolve));
    const socket = new HostSocket(
      { url: `ws://127.0.0.1:${port}/`, hello: { type: 'hello', protocol: 2 }, maxPayload: 1 << 20, welcomeTimeoutMs: 5_000, closeWaitMs: 100, logger: silent },
      { onWelcome() {}, onMessage() {}, onClose: () => closed() },
    );
    try {
      const frame = await firstFrame;
      expect(frame[1]! & 0x80).toBe(0x80); // masked, as a client frame must be
      const length = frame[1]! & 0x7f;
      const maskAt = length === 126 ? 4 : 2;
      expect([...frame.subarray(maskAt, maskAt + 4)]).toEqual([0, 0, 0, 0]);
      expect(frame.subarray(maskAt + 4).toString('utf8')).toMatch(/^\{"type":"hello"/);
    } finally {
      socket.terminate();
      await ended;
      server.close();
    }
  });
});
