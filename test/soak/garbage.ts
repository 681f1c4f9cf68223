/**
 * Misbehaving hosts for the soak, in process: each connects with its own host token, advertises
 * `junk`, and answers the calls it gets in a random bad way — correctly, twice, with a wrong-shape
 * frame naming the call, for an unknown id, not at all, with garbage text, a binary frame, an
 * oversize frame, by going silent (stops reading and answering pings), or by dropping the
 * connection — then comes back. Also: raw TCP connections that send junk before or after the
 * upgrade, and upgrades with a wrong token.
 */
import { connect } from 'node:net';
import { WebSocket } from 'ws';

type Pick = <T>(items: readonly T[]) => T;

/** One misbehaving host identity; `stop()` ends it for good. */
export class GarbageHost {
  #ws: WebSocket | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** What it did, by behaviour name. */
  readonly actions = new Map<string, number>();

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly maxPayload: number,
    private readonly pick: Pick,
    private readonly random: () => number,
  ) {}

  start(): void {
    if (this.#stopped) return;
    const ws = new WebSocket(this.url, { headers: { authorization: `Bearer ${this.token}` }, maxPayload: 64 * 1024 * 1024 });
    this.#ws = ws;
    ws.on('error', () => {});
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'soak-garbage' }));
      ws.send(JSON.stringify({ type: 'advertise', tools: [{ name: 'junk', inputSchema: { type: 'object' } }] }));
    });
    ws.on('message', (data: Buffer) => {
      let frame: { type?: string; id?: string };
      try {
        frame = JSON.parse(data.toString('utf8'));
      } catch {
        return;
      }
      if (frame.type === 'call' && typeof frame.id === 'string') this.#misbehave(ws, frame.id);
    });
    ws.on('close', () => {
      if (this.#ws === ws) this.#ws = undefined;
      this.#later(() => this.start(), 50 + this.random() * 500);
    });
  }

  /** Close for good; no reconnect. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#ws?.terminate();
  }

  #later(fn: () => void, ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(fn, ms);
  }

  #note(name: string): void {
    this.actions.set(name, (this.actions.get(name) ?? 0) + 1);
  }

  #misbehave(ws: WebSocket, id: string): void {
    const result = (stdout: string) => JSON.stringify({ type: 'result', id, stdout, stderr: '', exitCode: Math.floor(this.random() * 4) });
    const behaviour = this.pick([
      'answer',
      'answer',
      'answer',
      'twice',
      'wrong-shape',
      'unknown-id',
      'ignore',
      'ignore',
      'garbage',
      'binary',
      'oversize',
      'silent',
      'drop',
    ] as const);
    this.#note(behaviour);
    const delay = this.random() < 0.5 ? 0 : this.random() * 300;
    const act = (): void => {
      if (ws.readyState !== WebSocket.OPEN) return;
      switch (behaviour) {
        case 'answer':
          return ws.send(result('junk'));
        case 'twice':
          ws.send(result('once'));
          return ws.send(result('twice'));
        case 'wrong-shape':
          return ws.send(JSON.stringify({ type: 'result', id, stdout: 42 }));
        case 'unknown-id':
          ws.send(JSON.stringify({ type: 'result', id: `x${id}`, stdout: '', stderr: '', exitCode: 0 }));
          return ws.send(JSON.stringify({ type: 'result', id: '0', stdout: '', stderr: '', exitCode: 0 }));
        case 'ignore':
          return;
        case 'garbage':
          return ws.send('{"type": "result", garbage');
        case 'binary':
          return ws.send(Buffer.from(result('bin')), { binary: true });
        case 'oversize':
          return ws.send(JSON.stringify({ type: 'result', id, stdout: 'x'.repeat(this.maxPayload), stderr: '', exitCode: 0 }));
        case 'silent': {
          // Stop reading (no pongs, nothing answered) until the server gives up on us.
          (ws as unknown as { _socket?: { pause(): void } })._socket?.pause();
          return;
        }
        case 'drop':
          return ws.terminate();
      }
    };
    if (delay === 0) act();
    else setTimeout(act, delay);
  }
}

/** One raw TCP connection that misbehaves around the HTTP upgrade; resolves when it is closed. */
export function rawJunk(port: number, hostToken: string, pick: Pick, random: () => number): Promise<string> {
  const kind = pick(['http-garbage', 'wrong-token', 'junk-after-upgrade', 'half-handshake'] as const);
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (): void => resolve(kind);
    socket.on('error', () => {});
    socket.on('close', done);
    socket.setTimeout(3_000, () => socket.destroy());
    const upgrade = (token: string) =>
      `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    socket.on('connect', () => {
      switch (kind) {
        case 'http-garbage':
          socket.end(Buffer.from(Array.from({ length: 200 }, () => Math.floor(random() * 256))));
          return;
        case 'wrong-token':
          socket.write(upgrade('not-a-token'));
          return;
        case 'junk-after-upgrade':
          socket.write(upgrade(hostToken));
          socket.once('data', () => {
            // Unmasked, random opcode, random bytes: ws closes 1002.
            socket.write(Buffer.from([0x80 | Math.floor(random() * 16), 5, 1, 2, 3, 4, 5]));
            socket.end();
          });
          return;
        case 'half-handshake':
          socket.write(upgrade(hostToken).slice(0, 40));
          setTimeout(() => socket.destroy(), 100 + random() * 400);
      }
    });
  });
}
