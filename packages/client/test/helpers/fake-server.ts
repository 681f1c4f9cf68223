/**
 * A minimal toolwire server for tool-host tests: a `ws` WebSocketServer on 127.0.0.1 port 0 that
 * answers hello/advertise by hand (or lets the test do it) and records every frame.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AdvertisedMessage, HostMessage, ServerMessage, WelcomeMessage } from '@toolwire/protocol';
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
}

export class FakeConnection {
  readonly frames: HostMessage[] = [];
  readonly #waiters: { type: string; resolve: (m: HostMessage) => void }[] = [];
  #read = new Map<string, number>();
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(
    readonly ws: WebSocket,
    readonly request: IncomingMessage,
  ) {
    ws.on('error', () => {});
    this.closed = once(ws, 'close').then(([code, reason]) => ({ code: code as number, reason: String(reason) }));
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(String(data)) as HostMessage;
      this.frames.push(message);
      this.#wake();
    });
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
      handleProtocols: (protocols) => (protocols.has('toolwire.v1') ? 'toolwire.v1' : false),
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
    const conn = new FakeConnection(ws, req);
    this.connections.push(conn);
    const waiter = this.#waiting.shift();
    if (waiter) {
      this.#handed++;
      waiter(conn);
    }
    if (this.options.auto === false) return;
    void (async () => {
      await conn.next('hello');
      conn.send({
        type: 'welcome',
        protocol: 1,
        host: 'test-host',
        heartbeatMs: 10_000,
        limits: { maxPayload: 16 * 1024 * 1024, maxInFlight: 256, maxTools: 256 },
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
