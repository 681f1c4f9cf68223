/**
 * A WebSocket client that speaks the handshake and frames by hand over a `net.Socket`, for frames
 * `ws` refuses to build: unknown opcodes, RSV bits, unmasked or fragmented control frames, headers
 * claiming lengths that never arrive. Sockets are torn down through `defer` (test/helpers.ts).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { defer } from '../helpers.js';

export const Opcode = { CONTINUATION: 0x0, TEXT: 0x1, BINARY: 0x2, CLOSE: 0x8, PING: 0x9, PONG: 0xa } as const;

export interface FrameSpec {
  opcode: number;
  payload?: Buffer | string;
  fin?: boolean;
  /** RSV1..3 bits as a 3-bit number (4 = RSV1, 2 = RSV2, 1 = RSV3). */
  rsv?: number;
  /** Clients must mask (RFC 6455 §5.3); false builds a frame the server must refuse. */
  mask?: boolean;
  /** Claimed payload length, when it should differ from the real one (only the header changes). */
  claimedLength?: bigint;
}

/** Encode one WebSocket frame by hand. */
export function buildFrame(spec: FrameSpec): Buffer {
  const payload = typeof spec.payload === 'string' ? Buffer.from(spec.payload, 'utf8') : (spec.payload ?? Buffer.alloc(0));
  const mask = spec.mask ?? true;
  const length = spec.claimedLength ?? BigInt(payload.length);
  const head: number[] = [((spec.fin ?? true) ? 0x80 : 0) | (((spec.rsv ?? 0) & 7) << 4) | (spec.opcode & 0x0f)];
  const maskBit = mask ? 0x80 : 0;
  let ext = Buffer.alloc(0);
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65536n) {
    head.push(maskBit | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(length));
  } else {
    head.push(maskBit | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(length);
  }
  if (!mask) return Buffer.concat([Buffer.from(head), ext, payload]);
  const key = randomBytes(4);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = payload[i]! ^ key[i & 3]!;
  return Buffer.concat([Buffer.from(head), ext, key, masked]);
}

/** A server frame as parsed by {@link RawSocketHost}. */
export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/** A WebSocket client speaking the handshake and frames by hand over a `net.Socket`. */
export interface RawSocketHost {
  socket: Socket;
  /** Parsed server frames, in order. */
  frames: ServerFrame[];
  /** Resolves with the close code the server sent (a close frame), or 1006 when the TCP connection ended without one. */
  closed: Promise<number>;
  /** Write raw bytes. */
  write(bytes: Buffer): void;
  /** Send one masked text frame of `message` JSON. */
  sendJson(message: unknown): void;
  /** Resolves with the next text frame of JSON `type`. */
  next(type: string): Promise<Record<string, unknown>>;
}

/**
 * Open a TCP connection to `url`, upgrade with `Authorization: Bearer <token>` (optionally offering
 * `extensions`), and return a frame-level client. Rejects when the upgrade is not 101. The response
 * headers are available as `headers`.
 */
export async function rawSocketHost(url: string, token: string, extensions?: string): Promise<RawSocketHost & { headers: string }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  defer(() => void socket.destroy());
  await once(socket, 'connect');
  const key = randomBytes(16).toString('base64');
  socket.write(
    `GET / HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n` +
      (extensions ? `Sec-WebSocket-Extensions: ${extensions}\r\n` : '') +
      '\r\n',
  );
  let buffer = Buffer.alloc(0);
  let headers = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      headers = buffer.subarray(0, end).toString('latin1');
      buffer = buffer.subarray(end + 4);
      if (!headers.startsWith('HTTP/1.1 101')) reject(new Error(`upgrade refused: ${headers.split('\r\n')[0]}`));
      else resolve();
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error('closed during upgrade')));
  });
  const frames: ServerFrame[] = [];
  const listeners = new Set<() => void>();
  let closeCode: number | undefined;
  const parse = (): void => {
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0]! & 0x0f;
      let length = buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (buffer.length < offset + length) return;
      const payload = buffer.subarray(offset, offset + length);
      buffer = buffer.subarray(offset + length);
      frames.push({ opcode, payload });
      if (opcode === Opcode.CLOSE) closeCode ??= payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      for (const l of listeners) l();
    }
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    parse();
  });
  parse();
  const closed = new Promise<number>((resolve) => {
    const settle = (): void => resolve(closeCode ?? 1006);
    listeners.add(() => {
      if (closeCode !== undefined) settle();
    });
    socket.once('close', settle);
  });
  const next = (type: string): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      let seen = frames.length;
      const check = (): void => {
        for (; seen < frames.length; seen++) {
          const f = frames[seen]!;
          if (f.opcode !== Opcode.TEXT) continue;
          const msg = JSON.parse(f.payload.toString('utf8')) as Record<string, unknown>;
          if (msg.type === type) {
            listeners.delete(check);
            resolve(msg);
            return;
          }
        }
      };
      listeners.add(check);
      socket.once('close', () => reject(new Error(`closed before a ${type} frame`)));
      check();
    });
  return {
    socket,
    frames,
    closed,
    headers,
    write: (bytes) => void socket.write(bytes),
    sendJson: (message) => void socket.write(buildFrame({ opcode: Opcode.TEXT, payload: JSON.stringify(message) })),
    next,
  };
}

/** hello + advertise over a {@link RawSocketHost}. */
export async function rawSocketAdvertise(host: RawSocketHost, tools: unknown[]): Promise<void> {
  const welcome = host.next('welcome');
  host.sendJson({ type: 'hello', protocol: 1, software: 'raw-bytes' });
  await welcome;
  const advertised = host.next('advertised');
  host.sendJson({ type: 'advertise', tools });
  await advertised;
}
