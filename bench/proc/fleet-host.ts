/**
 * Bench helper for s6's fleet: `BENCH_COUNT` hosts (identities `BENCH_FIRST` … `BENCH_FIRST +
 * BENCH_COUNT − 1`) in this process, each one TCP connection that speaks the host side of the
 * protocol as far as a connected, idle host does: the WebSocket upgrade (bearer token, toolwire
 * subprotocols, a fresh `Sec-WebSocket-Key`), `hello` for the version the server picked, then on
 * `welcome` the `advertise` frame of the same 10 tools `toolwire-host.ts` registers (built once by the
 * client's own `ToolSet`, so the server sees the bytes a `ToolHost` sends), and a pong to every ping.
 * It runs no tools: s6 calls only the echo host.
 *
 * Why not `ToolHost`s, nor `ws` clients: s6 measures the server, and on a 2-vCPU machine the load
 * generator shares the server's cores. 19,000 `ToolHost`s used as much CPU as the server while they
 * connected; `ws` clients still cost about as much as the server per connect (node's HTTP client
 * for the upgrade, a receiver and sender per socket, a JSON parse per frame). Here every frame a host
 * sends is built once as a Buffer (masked with the all-zero key, as a `ToolHost` masks on loopback),
 * the upgrade request is one string, server frames are told apart by their first bytes (no JSON),
 * and there is one timer per process. `BENCH_S6_REAL_HOSTS=1` keeps `ToolHost`s.
 *
 * Commands: `connect` (dial every host, `BATCH` in flight, resolve when all have their `advertised`),
 * `info` (CPU, RSS, hosts, and `lost`: connections closed after they were advertised).
 */
import { randomFillSync } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { encodeMessage, PROTOCOL_VERSIONS, SUBPROTOCOLS, subprotocolOf } from '@toolwire/protocol';
import { ToolSet } from '../../packages/client/src/host/tool-set.js';
import { SOFTWARE } from '../../packages/client/src/version.js';
import { processInfo, send, serve } from './ipc.js';
import { FILLERS, fillerSchema, hostToken } from './tools.js';

const server = new URL(process.env.BENCH_URL!);
const first = Number(process.env.BENCH_FIRST ?? 0);
const count = Number(process.env.BENCH_COUNT ?? 1);
/**
 * The local address this process dials from (each fleet process its own 127.0.0.x). From one address,
 * the kernel picks each dial's ephemeral port by walking the ports of one parity (14,116 of the
 * default 32768–60999) before the other: past ~14,000 connections every dial walked all of them, in
 * the host processes' system time, and the second wave's connects slowed down.
 */
const localAddress = process.env.BENCH_SOURCE_ADDRESS;
/** Dials in flight at once (as `toolwire-host.ts`). */
const BATCH = 50;
/** Bound on the whole `connect` command (every dial → `advertised`), ms. */
const CONNECT_TIMEOUT_MS = 300_000;
/** Largest server frame this host accepts (a `welcome` or `advertised` of 10 tools is well under 1 KiB). */
const MAX_FRAME_BYTES = 64 * 1024;

/** One client → server WebSocket frame: FIN, `opcode`, masked with the all-zero key (so the payload goes as it is). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : n < 65_536 ? Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 0xff]) : undefined;
  if (head === undefined) throw new RangeError(`frame of ${n} bytes: not needed here`);
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

/** The advertise frame of `toolwire-host.ts`'s tool set (echo, cat, 8 fillers), as a `ToolHost` encodes it. */
function advertiseText(): string {
  const object = { type: 'object' } as const;
  const tools = new ToolSet();
  tools.addHandler('echo', { description: 'stdout = the input JSON', inputSchema: object }, (input) => JSON.stringify(input));
  tools.addCommand('cat', { description: 'stdout = stdin', inputSchema: object, command: ['cat'] });
  for (let k = 0; k < FILLERS; k++) tools.addHandler(`tool${k}`, { description: `filler tool ${k}`, inputSchema: fillerSchema(k) }, () => '');
  return encodeMessage({ type: 'advertise', tools: tools.specs() });
}

const ADVERTISE = clientFrame(1, Buffer.from(advertiseText()));
/** `hello` frame by the subprotocol the server picked. */
const HELLO = new Map(
  PROTOCOL_VERSIONS.map((v) => [subprotocolOf(v), clientFrame(1, Buffer.from(encodeMessage({ type: 'hello', protocol: v, software: SOFTWARE })))]),
);
const CLOSE = clientFrame(8, Buffer.from([0x03, 0xe8])); // 1000
const WELCOME = Buffer.from('{"type":"welcome"');
const ADVERTISED = Buffer.from('{"type":"advertised"');
const PROTOCOL_HEADER = /\r\nsec-websocket-protocol: *([^\r]*)/i;

/** The upgrade request of host `i` with `key` (16 random bytes, base64), as `ws` writes it. */
function upgradeRequest(i: number, key: string): string {
  return (
    `GET ${server.pathname}${server.search} HTTP/1.1\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n` +
    `Connection: Upgrade\r\nUpgrade: websocket\r\nauthorization: Bearer ${hostToken(i)}\r\n` +
    `Sec-WebSocket-Protocol: ${SUBPROTOCOLS.join(',')}\r\nHost: ${server.host}\r\n\r\n`
  );
}

const keyBytes = Buffer.alloc(16);
const sockets: Socket[] = [];
let lost = 0;

/** True when `frame` (a payload) starts with `prefix`. */
function startsWith(frame: Buffer, prefix: Buffer): boolean {
  return frame.length >= prefix.length && frame.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** One host's connection: the upgrade, then frames. Settles `done` at its `advertised` (or on a failure before it). */
class FleetHost {
  readonly #i: number;
  readonly #socket: Socket;
  readonly #done: (error?: Error) => void;
  #upgraded = false;
  #advertised = false;
  #buffer: Buffer | undefined;

  constructor(i: number, done: (error?: Error) => void) {
    this.#i = i;
    this.#done = done;
    randomFillSync(keyBytes);
    const request = upgradeRequest(i, keyBytes.toString('base64'));
    const socket = connect({ host: server.hostname, port: Number(server.port), noDelay: true, ...(localAddress && { localAddress }) });
    this.#socket = socket;
    sockets.push(socket);
    socket.write(request);
    socket.on('data', (chunk: Buffer) => this.#data(chunk));
    socket.on('error', () => {}); // the close that follows settles the dial
    socket.on('close', () => this.#closed());
  }

  #closed(): void {
    if (this.#advertised) lost++;
    else this.#done(new Error(`host ${this.#i}: closed before advertised`));
  }

  #fail(why: string): void {
    this.#socket.destroy();
    if (!this.#advertised) this.#done(new Error(`host ${this.#i}: ${why}`));
  }

  #data(chunk: Buffer): void {
    let data = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
    this.#buffer = undefined;
    if (!this.#upgraded) {
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) {
        if (data.length > MAX_FRAME_BYTES) this.#fail('upgrade response too long');
        else this.#buffer = data;
        return;
      }
      const head = data.toString('latin1', 0, end);
      if (!head.startsWith('HTTP/1.1 101 ')) return this.#fail(`upgrade answered ${head.slice(0, head.indexOf('\r'))}`);
      const hello = HELLO.get(PROTOCOL_HEADER.exec(head)?.[1]?.trim() ?? '');
      if (hello === undefined) return this.#fail('no toolwire subprotocol picked');
      this.#upgraded = true;
      this.#socket.write(hello);
      data = data.subarray(end + 4);
    }
    // Server frames: unmasked, FIN set (the server never fragments these small messages).
    while (data.length >= 2) {
      if ((data[0]! & 0x80) === 0) return this.#fail('fragmented server frame');
      const opcode = data[0]! & 0x0f;
      let length = data[1]! & 0x7f;
      let at = 2;
      if (length === 126) {
        if (data.length < 4) break;
        length = data.readUInt16BE(2);
        at = 4;
      } else if (length === 127) return this.#fail('server frame over 64 KiB');
      if (length > MAX_FRAME_BYTES) return this.#fail('server frame over 64 KiB');
      if (data.length < at + length) break;
      const payload = data.subarray(at, at + length);
      data = data.subarray(at + length);
      this.#frame(opcode, payload);
    }
    if (data.length > 0) this.#buffer = Buffer.from(data);
  }

  #frame(opcode: number, payload: Buffer): void {
    if (opcode === 9) this.#socket.write(clientFrame(10, payload));
    else if (opcode === 8) {
      this.#socket.end(CLOSE);
    } else if (opcode === 1 && !this.#advertised) {
      if (startsWith(payload, WELCOME)) this.#socket.write(ADVERTISE);
      else if (startsWith(payload, ADVERTISED)) {
        this.#advertised = true;
        this.#done();
      }
    }
  }
}

/** Dial host `i`; resolves at its `advertised`, rejects on a close or error before it. */
function dial(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    new FleetHost(i, (error) => (error === undefined ? resolve() : reject(error)));
  });
}

async function connectAll(): Promise<void> {
  let next = first;
  const end = first + count;
  const worker = async (): Promise<void> => {
    while (next < end) await dial(next++);
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`connect: not every host advertised within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
  });
  try {
    await Promise.race([Promise.all(Array.from({ length: Math.min(BATCH, count) }, worker)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

serve(async (command) => {
  if (command.cmd === 'info') return { ...processInfo(), hosts: sockets.length, lost };
  if (command.cmd === 'connect') {
    await connectAll();
    return { hosts: sockets.length };
  }
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready', hosts: 0 });
