/**
 * A minimal toolwire server for tool-host tests: a `ws` WebSocketServer on 127.0.0.1 port 0 that
 * answers hello/advertise by hand (or lets the test do it) and records every frame. It speaks
 * protocol 1 unless told `protocol: 2`; then, with `output`, it offers live output in `welcome`,
 * checks every `output` chunk against the protocol (order, chunk size, window) and credits the
 * bytes it took (`credit: 'auto'`, per half window, as the real server does) or leaves credit to the
 * test (`credit: 'manual'`).
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import {
  type AdvertisedMessage,
  type HostMessage,
  type OutputMessage,
  type ResultMessage,
  type ServerMessage,
  type WelcomeMessage,
  type WelcomeOutput,
  decodeOutputFrame,
  fromWire,
  toWire,
} from '@toolwire/protocol';
import { WebSocket, WebSocketServer } from 'ws';

export interface FakeServerOptions {
  /** Fields merged into the `welcome` sent after `hello`. */
  welcome?: Partial<WelcomeMessage>;
  /** Answer hello with welcome and advertise with advertised (all accepted). Default true. */
  auto?: boolean;
  /** Tokens accepted at the upgrade; others get HTTP 401. Default: any. */
  tokens?: string[];
  /** Refuse upgrade number `attempt` (0-based, every upgrade counted) with this status and headers; `undefined` lets it through. */
  refuse?: (attempt: number) => { status: number; headers?: Record<string, string> } | undefined;
  /** The protocol version to pick among those the host offers. Default 1. */
  protocol?: 1 | 2;
  /** Protocol 2: the `welcome.output` offered (live output); absent, none. */
  output?: WelcomeOutput;
  /** Protocol 2 with `output`: credit each call's bytes as they arrive (`auto`, default) or only when the test sends it (`manual`). */
  credit?: 'auto' | 'manual';
}

/** What the fake server saw of one call's live output. */
export interface CallStream {
  chunks: OutputMessage[];
  stdout: Buffer[];
  stderr: Buffer[];
  /** Bytes the host may have sent: the window plus every credit sent. */
  granted: number;
  /** Bytes of the chunks received. */
  received: number;
  /** Received and not yet credited (auto credit). */
  uncredited: number;
}

export class FakeConnection {
  readonly frames: HostMessage[] = [];
  readonly #waiters: { type: string; resolve: (m: HostMessage) => void }[] = [];
  #read = new Map<string, number>();
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Live output per call id (protocol 2). */
  readonly streams = new Map<string, CallStream>();
  /** Every way the host broke the live-output protocol (order, chunk size, window, streamed counts). */
  readonly violations: string[] = [];

  constructor(
    readonly ws: WebSocket,
    readonly request: IncomingMessage,
    readonly options: FakeServerOptions = {},
  ) {
    ws.on('error', () => {});
    this.closed = once(ws, 'close').then(([code, reason]) => ({ code: code as number, reason: String(reason) }));
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const message = isBinary ? binaryOutput(data, this.violations) : (JSON.parse(String(data)) as HostMessage);
      this.frames.push(message);
      if (message.type === 'output') this.#onOutput(message);
      else if (message.type === 'result') this.#onResult(message);
      this.#wake();
    });
  }

  /** The live output of call `id` so far (made on first use). */
  stream(id: string): CallStream {
    let s = this.streams.get(id);
    if (s === undefined) {
      s = { chunks: [], stdout: [], stderr: [], granted: this.options.output?.windowBytes ?? 0, received: 0, uncredited: 0 };
      this.streams.set(id, s);
    }
    return s;
  }

  /** Bytes of call `id` received in `output` chunks. */
  streamedBytes(id: string): number {
    return this.streams.get(id)?.received ?? 0;
  }

  /** Send `credit` for call `id` and count it as granted. */
  credit(id: string, bytes: number): void {
    this.stream(id).granted += bytes;
    this.send({ type: 'credit', id, bytes });
  }

  /**
   * The capture of call `id` as a server builds it (DESIGN §5): its chunks of each stream in `seq`
   * order, then the bytes its `result` still carries.
   */
  capture(result: ResultMessage): { stdout: Buffer; stderr: Buffer } {
    const s = this.streams.get(result.id);
    return {
      stdout: Buffer.concat([...(s?.stdout ?? []), fromWire(result.stdout, result.stdoutEncoding)]),
      stderr: Buffer.concat([...(s?.stderr ?? []), fromWire(result.stderr, result.stderrEncoding)]),
    };
  }

  #onOutput(message: OutputMessage): void {
    const s = this.stream(message.id);
    const bytes = Buffer.from(fromWire(message.data, message.encoding));
    const max = this.options.output?.maxChunkBytes ?? 0;
    if (this.options.protocol !== 2 || this.options.output === undefined) this.violations.push(`${message.id}: output without a window offered`);
    if (message.seq !== s.chunks.length) this.violations.push(`${message.id}: seq ${message.seq}, expected ${s.chunks.length}`);
    if (bytes.length === 0 || bytes.length > max) this.violations.push(`${message.id}: chunk of ${bytes.length} bytes (max ${max})`);
    s.chunks.push(message);
    s[message.stream].push(bytes);
    s.received += bytes.length;
    if (s.received > s.granted) this.violations.push(`${message.id}: ${s.received} bytes sent, ${s.granted} granted`);
    if (this.options.credit === 'manual') return;
    s.uncredited += bytes.length;
    const window = this.options.output?.windowBytes ?? 1;
    if (s.uncredited >= Math.max(1, Math.floor(window / 2))) {
      const n = s.uncredited;
      s.uncredited = 0;
      this.credit(message.id, n);
    }
  }

  #onResult(result: ResultMessage): void {
    const s = this.streams.get(result.id);
    const said = result.streamed;
    if (s === undefined) {
      if (said !== undefined && (said.stdout !== 0 || said.stderr !== 0 || said.chunks !== 0))
        this.violations.push(`${result.id}: streamed ${JSON.stringify(said)}, nothing arrived`);
      return;
    }
    const got = { stdout: Buffer.concat(s.stdout).length, stderr: Buffer.concat(s.stderr).length, chunks: s.chunks.length };
    if (JSON.stringify(said) !== JSON.stringify(got)) this.violations.push(`${result.id}: streamed ${JSON.stringify(said)}, ${JSON.stringify(got)} arrived`);
  }

  /** The next not-yet-returned frame of `type` (in arrival order). */
  next<T extends HostMessage['type']>(type: T): Promise<Extract<HostMessage, { type: T }>> {
    return new Promise((resolve) => {
      this.#waiters.push({ type, resolve: resolve as (m: HostMessage) => void });
      this.#wake();
    });
  }

  send(message: ServerMessage): void {
    this.ws.send(JSON.stringify(message));
  }

  #wake(): void {
    for (let i = 0; i < this.#waiters.length; i++) {
      const w = this.#waiters[i]!;
      const from = this.#read.get(w.type) ?? 0;
      const idx = this.frames.findIndex((f, j) => j >= from && f.type === w.type);
      if (idx === -1) continue;
      this.#read.set(w.type, idx + 1);
      this.#waiters.splice(i--, 1);
      w.resolve(this.frames[idx]!);
    }
  }
}

export class FakeServer {
  readonly connections: FakeConnection[] = [];
  readonly #waiting: ((c: FakeConnection) => void)[] = [];
  #handed = 0;
  rejectedUpgrades = 0;
  /** Every upgrade request seen, refused or not. */
  upgrades = 0;

  private constructor(
    readonly wss: WebSocketServer,
    readonly options: FakeServerOptions,
  ) {}

  static async start(options: FakeServerOptions = {}): Promise<FakeServer> {
    let server!: FakeServer;
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      handleProtocols: (protocols) =>
        server.options.protocol === 2 && protocols.has('toolwire.v2') ? 'toolwire.v2' : protocols.has('toolwire.v1') ? 'toolwire.v1' : false,
      verifyClient: (info, cb) => {
        const attempt = server.upgrades++;
        const refusal = server.options.refuse?.(attempt);
        if (refusal) {
          server.rejectedUpgrades++;
          cb(false, refusal.status, undefined, refusal.headers);
          return;
        }
        const tokens = server.options.tokens;
        const auth = info.req.headers.authorization ?? '';
        if (tokens && !tokens.some((t) => auth === `Bearer ${t}`)) {
          server.rejectedUpgrades++;
          cb(false, 401, 'Unauthorized');
        } else cb(true);
      },
    });
    server = new FakeServer(wss, options);
    wss.on('connection', (ws, req) => server.#accept(ws, req));
    await once(wss, 'listening');
    return server;
  }

  get url(): string {
    const address = this.wss.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected address');
    return `ws://127.0.0.1:${address.port}`;
  }

  /** The next connection not yet returned by this method. */
  nextConnection(): Promise<FakeConnection> {
    return new Promise((resolve) => {
      const ready = this.connections[this.#handed];
      if (ready) {
        this.#handed++;
        resolve(ready);
      } else this.#waiting.push(resolve);
    });
  }

  /** Terminate every client and stop listening. */
  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  #accept(ws: WebSocket, req: IncomingMessage): void {
    const conn = new FakeConnection(ws, req, this.options);
    this.connections.push(conn);
    const waiter = this.#waiting.shift();
    if (waiter) {
      this.#handed++;
      waiter(conn);
    }
    if (this.options.auto === false) return;
    void (async () => {
      await conn.next('hello');
      const v2 = this.options.protocol === 2 && ws.protocol === 'toolwire.v2';
      conn.send({
        type: 'welcome',
        protocol: v2 ? 2 : 1,
        host: 'test-host',
        heartbeatMs: 10_000,
        limits: { maxPayload: 16 * 1024 * 1024, maxInFlight: 256, maxTools: 256 },
        ...(v2 && this.options.output !== undefined ? { output: this.options.output } : {}),
        ...this.options.welcome,
      });
      for (;;) {
        const advertise = await Promise.race([conn.next('advertise'), conn.closed.then(() => undefined)]);
        if (!advertise || ws.readyState !== WebSocket.OPEN) return;
        const advertised: AdvertisedMessage = {
          type: 'advertised',
          accepted: advertise.tools.map((t) => ({ name: t.name, as: `test-host__${t.name}` })),
          rejected: [],
        };
        conn.send(advertised);
      }
    })();
  }
}

/**
 * A binary `output` frame (protocol 2) as the JSON `output` message it stands for (`data` as UTF-8
 * text or base64, as `toWire` gives it), so tests compare chunks one way whichever frame carried them.
 */
function binaryOutput(data: Buffer, violations: string[]): OutputMessage {
  const decoded = decodeOutputFrame(data);
  if (!decoded.ok) {
    violations.push(`bad binary frame: ${decoded.error.reason}`);
    return { type: 'output', id: decoded.error.id ?? '?', stream: 'stdout', seq: -1, data: '' };
  }
  const { id, stream, seq, bytes } = decoded.message;
  const wire = toWire(bytes);
  const message: OutputMessage = { type: 'output', id, stream, seq, data: wire.text };
  if (wire.encoding !== undefined) message.encoding = wire.encoding;
  return message;
}
