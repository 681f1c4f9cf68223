import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROTOCOL_VERSION, fromWire } from '@toolwire/protocol';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServerRefusedError, TokenRefusedError, ToolHost, type ToolHostOptions } from '../src/index.js';
import { FakeServer, type FakeServerOptions } from './helpers/fake-server.js';
import { isGone, killQuietly, poll } from './helpers/process.js';

const object = { type: 'object' } as const;
const silent = pino({ level: 'silent' });

const servers: FakeServer[] = [];
const hosts: ToolHost[] = [];
const pids: number[] = [];
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-host-'));
});
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const pid of pids.splice(0)) killQuietly(pid);
  await rm(dir, { recursive: true, force: true });
});

async function server(options: FakeServerOptions = {}): Promise<FakeServer> {
  const s = await FakeServer.start(options);
  servers.push(s);
  return s;
}

function host(options: Partial<ToolHostOptions> & { server: string }): ToolHost {
  const h = new ToolHost({ token: 'tok', logger: silent, reconnect: { baseMs: 5, maxMs: 20 }, ...options });
  hosts.push(h);
  return h;
}

async function pidFrom(file: string): Promise<number> {
  const pid = Number(await poll(async () => (await readFile(file, 'utf8').catch(() => '')).trim(), 5000, file));
  pids.push(pid);
  return pid;
}

const call = (id: string, tool: string, input: unknown = {}, deadlineMs = 10_000) =>
  ({ type: 'call', id, tool, input, workspace: '/ws', agent: 'agent-1', deadlineMs }) as const;

describe('ToolHost against a fake server', () => {
  it('dials with the bearer token and every subprotocol, says hello at the version the server picked, and advertises every tool after welcome', async () => {
    const s = await server();
    const h = host({ server: s.url })
      .tool('echo', { description: 'echo input', inputSchema: object }, (input) => JSON.stringify(input))
      .command('list', { description: 'ls', inputSchema: object, command: ['ls'] });
    const connected = once(h, 'connected');
    const advertised = await h.start();
    expect(advertised.accepted.map((a) => a.name)).toEqual(['echo', 'list']);
    const [welcome] = await connected;
    expect(welcome.host).toBe('test-host');
    const conn = s.connections[0]!;
    expect(conn.request.headers.authorization).toBe('Bearer tok');
    // Every version is offered, newest first; this fake server speaks only v1, so the session is v1.
    expect(conn.request.headers['sec-websocket-protocol']).toBe(`toolwire.v${PROTOCOL_VERSION},toolwire.v1`);
    expect(conn.ws.protocol).toBe('toolwire.v1');
    expect(conn.frames[0]).toEqual({ type: 'hello', protocol: 1, software: expect.stringMatching(/^@toolwire\/client \d/) });
    expect(conn.frames[1]).toEqual({
      type: 'advertise',
      tools: [
        { name: 'echo', description: 'echo input', inputSchema: object },
        { name: 'list', description: 'ls', inputSchema: object },
      ],
    });
  });

  it('throws a TypeError at once for a bad tool name, a duplicate, or a bad server URL', () => {
    const h = host({ server: 'ws://127.0.0.1:1' });
    expect(() => h.tool('bad name', { inputSchema: object }, () => '')).toThrow(TypeError);
    h.tool('ok', { inputSchema: object }, () => '');
    expect(() => h.tool('ok', { inputSchema: object }, () => '')).toThrow(/already registered/);
    expect(() => h.command('c', { inputSchema: object, command: [] })).toThrow(TypeError);
    expect(() => new ToolHost({ server: 'http://x' })).toThrow(TypeError);
  });

  it('throws a TypeError at once for a token that cannot travel in an HTTP header (whitespace, control characters)', () => {
    for (const token of ['a\nb', 'a b', 'a\u0000b', 'a\tb', 'tok\r', 'a\u2028b']) {
      expect(() => new ToolHost({ server: 'ws://127.0.0.1:1', token })).toThrow(/ToolHostOptions\.token must not hold whitespace or control characters/);
    }
    expect(() => new ToolHost({ server: 'ws://127.0.0.1:1', token: 'Ab-_~+/.=9' })).not.toThrow();
  });

  it('answers an in-process tool call with its stdout and exit 0', async () => {
    const s = await server();
    const h = host({ server: s.url }).tool('echo', { inputSchema: object }, (input, ctx) => `${JSON.stringify(input)} ${ctx.agent} ${ctx.workspace} ${ctx.id}`);
    await h.start();
    const conn = s.connections[0]!;
    conn.send(call('c1', 'echo', { a: 1 }));
    const result = await conn.next('result');
    expect(result).toEqual({ type: 'result', id: 'c1', stdout: '{"a":1} agent-1 /ws c1', stderr: '', exitCode: 0 });
  });

  it('logs one info line per call with its tool and exit code, and the pid of its subprocess tool (spawned here or by the spawn helper), none for an in-process tool', async () => {
    for (const spawnHelper of [false, true]) {
      const s = await server();
      const lines: Record<string, unknown>[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
      const h = host({ server: s.url, root: dir, logger, spawnHelper })
        .tool('echo', { inputSchema: object }, () => 'x')
        .command('pid', { inputSchema: object, command: ['sh', '-c', 'printf %s "$$"'] });
      await h.start();
      const conn = s.connections[0]!;
      conn.send(call('p', 'pid'));
      const pid = Number((await conn.next('result')).stdout);
      conn.send(call('e', 'echo'));
      await conn.next('result');
      const ended = lines.filter((l) => l.msg === 'toolwire: call ended');
      expect(ended, `spawnHelper: ${spawnHelper}`).toEqual([
        expect.objectContaining({ level: 30, call: 'p', tool: 'pid', exitCode: 0, toolPid: pid, pid: process.pid }),
        expect.objectContaining({ level: 30, call: 'e', tool: 'echo', exitCode: 0, pid: process.pid }),
      ]);
      expect(pid).not.toBe(process.pid);
      expect(ended[1]!.toolPid).toBeUndefined();
    }
  });

  it('answers a throwing handler with 70 and the message on stderr', async () => {
    const s = await server();
    const h = host({ server: s.url }).tool('boom', { inputSchema: object }, () => {
      throw new Error('kaboom');
    });
    await h.start();
    s.connections[0]!.send(call('c1', 'boom'));
    const result = await s.connections[0]!.next('result');
    expect(result).toMatchObject({ id: 'c1', exitCode: 70, failure: 'host_error', stdout: '' });
    expect(result.stderr).toBe('toolwire: tool failed: kaboom\n');
  });

  it('answers an unknown tool with 127 and runs nothing', async () => {
    const s = await server();
    await host({ server: s.url })
      .tool('echo', { inputSchema: object }, () => 'x')
      .start();
    s.connections[0]!.send(call('c1', 'rm'));
    const result = await s.connections[0]!.next('result');
    expect(result).toEqual({ type: 'result', id: 'c1', stdout: '', stderr: 'toolwire: no such tool "rm" on this host\n', exitCode: 127, failure: 'not_found' });
  });

  it('sends non-UTF-8 bytes as base64 and runs subprocess tools with the call facts in env', async () => {
    const s = await server();
    const h = host({ server: s.url, root: dir })
      .tool('bytes', { inputSchema: object }, () => ({ stdout: new Uint8Array([0xff, 0x00, 0x41]), stderr: new Uint8Array(0), exitCode: 3 }))
      .command('env', { inputSchema: object, command: ['sh', '-c', 'cat; echo " $TOOLWIRE_CALL_ID $TOOLWIRE_AGENT $TOOLWIRE_DEADLINE_MS $PWD"'], timeoutMs: 5000 });
    await h.start();
    const conn = s.connections[0]!;
    conn.send(call('b', 'bytes'));
    const bytes = await conn.next('result');
    expect(bytes).toMatchObject({ exitCode: 3, stdoutEncoding: 'base64' });
    expect([...fromWire(bytes.stdout, bytes.stdoutEncoding)]).toEqual([0xff, 0x00, 0x41]);
    conn.send(call('e', 'env', { q: true }, 60_000));
    const env = await conn.next('result');
    expect(env.stdout).toBe(`{"q":true} e agent-1 5000 ${dir}\n`);
  });

  it('on cancel kills the subprocess and returns its partial output with 130', async () => {
    const s = await server();
    const pidFile = join(dir, 'pid');
    const h = host({ server: s.url, cancelGraceMs: 300, drainMs: 100 }).command('slow', {
      inputSchema: object,
      command: ['sh', '-c', `echo partial; echo $$ > ${pidFile}; exec sleep 1000`],
    });
    await h.start();
    const conn = s.connections[0]!;
    conn.send(call('c1', 'slow'));
    const pid = await pidFrom(pidFile);
    conn.send({ type: 'cancel', id: 'c1', reason: 'stop' });
    const result = await conn.next('result');
    expect(result).toMatchObject({ id: 'c1', exitCode: 130, failure: 'cancelled', stdout: 'partial\n', stderr: 'toolwire: cancelled by stop\n' });
    await poll(() => isGone(pid), 2000, 'tool process to be gone');
  });

  it('on cancel aborts an in-process handler and keeps what it returns, with 130', async () => {
    const s = await server();
    const h = host({ server: s.url }).tool(
      'wait',
      { inputSchema: object },
      (_input, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('partial\n'), { once: true })),
    );
    await h.start();
    const conn = s.connections[0]!;
    conn.send(call('c1', 'wait'));
    conn.send({ type: 'cancel', id: 'c1', reason: 'stop' });
    const result = await conn.next('result');
    expect(result).toMatchObject({ exitCode: 130, stdout: 'partial\n', stderr: 'toolwire: cancelled by stop\n' });
  });

  it('arms the deadline itself (min of the call deadline and timeout_ms) and answers 124', async () => {
    const s = await server();
    const h = host({ server: s.url, cancelGraceMs: 200, drainMs: 100 }).command('sleep', {
      inputSchema: object,
      command: ['sh', '-c', 'echo started; exec sleep 1000'],
      timeoutMs: 150,
    });
    await h.start();
    const conn = s.connections[0]!;
    const t0 = Date.now();
    conn.send(call('c1', 'sleep', {}, 60_000));
    const result = await conn.next('result');
    expect(Date.now() - t0).toBeLessThan(150 + 200 + 100 + 500);
    expect(result).toMatchObject({ exitCode: 124, failure: 'deadline', stdout: 'started\n', stderr: 'toolwire: deadline of 150 ms exceeded\n' });
  });

  it('caps each stream so the result frame fits the server maxPayload', async () => {
    const s = await server({ welcome: { limits: { maxPayload: 40_000, maxInFlight: 8, maxTools: 8 } } });
    const h = host({ server: s.url }).command('big', { inputSchema: object, command: ['node', '-e', 'process.stdout.write("y".repeat(200000))'] });
    await h.start();
    s.connections[0]!.send(call('c1', 'big'));
    const result = await s.connections[0]!.next('result');
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(40_000);
    expect(result.stdout).toMatch(/\[\.\.\. stdout truncated: 200000 bytes \/ 1 lines total; showing the first \d+ and last \d+ bytes \.\.\.\]/);
    expect(result.exitCode).toBe(0);
  });

  it('reconnects after the server drops the socket, re-advertises, and kills the abandoned call without replaying it', async () => {
    const s = await server();
    const pidFile = join(dir, 'pid');
    const h = host({ server: s.url, cancelGraceMs: 200, drainMs: 100 }).command('slow', {
      inputSchema: object,
      command: ['sh', '-c', `echo $$ > ${pidFile}; exec sleep 1000`],
    });
    await h.start();
    const first = s.connections[0]!;
    first.send(call('c1', 'slow'));
    const pid = await pidFrom(pidFile);
    const disconnected = once(h, 'disconnected');
    const readvertised = once(h, 'advertised');
    first.ws.terminate();
    const [info] = await disconnected;
    expect(info.code).toBe(1006);
    await readvertised;
    const second = s.connections[1]!;
    expect(second.frames.map((f) => f.type)).toEqual(['hello', 'advertise']);
    await poll(() => isGone(pid), 2000, 'abandoned tool process to be gone');
    // The second connection never sees a result for c1.
    second.send(call('c2', 'nope'));
    expect((await second.next('result')).id).toBe('c2');
  });

  it('treats a server with no ping for 2 × heartbeat + margin as dead and reconnects', async () => {
    const s = await server({ welcome: { heartbeatMs: 40 } });
    const h = host({ server: s.url });
    await h.start();
    const errors: Error[] = [];
    h.on('error', (e) => errors.push(e));
    const [info] = await once(h, 'disconnected');
    expect(info.code).toBe(1006);
    expect(errors[0]?.message).toMatch(/heartbeat lost/);
    await poll(() => s.connections.length >= 2, 5000, 'a second connection');
  });

  it('stops after one attempt on HTTP 401: emits TokenRefusedError (error, then stopped) and rejects start()', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = timers();
    const s = await server({ tokens: ['other'] });
    const h = host({ server: s.url, token: 'wrong-secret', reconnect: { baseMs: 1, maxMs: 5 } });
    const errors: Error[] = [];
    h.on('error', (e) => errors.push(e));
    const stopped = new Promise<ServerRefusedError>((resolve) => h.once('stopped', (e) => resolve(e as ServerRefusedError)));
    await expect(h.start()).rejects.toThrow(TokenRefusedError);
    const error = await stopped;
    expect(error).toBeInstanceOf(TokenRefusedError);
    expect(error).toBeInstanceOf(ServerRefusedError);
    expect(error.kind).toBe('token');
    expect(error.status).toBe(401);
    expect(error.message).toBe(`the server ${s.url} did not accept this host's token (HTTP 401)`);
    expect(error.message).not.toContain('wrong-secret');
    expect(errors).toEqual([error]);
    expect(s.upgrades).toBe(1);
    // No reconnect is scheduled: no timer of the host is left (a retry would come within 5 ms).
    expect(timers()).toBeLessThanOrEqual(timersBefore);
  });

  it('waits for Retry-After after HTTP 429 (no challenge), then connects; the error names the 429 reason', async () => {
    const s = await server({ refuse: (n) => (n === 0 ? { status: 429, headers: { 'Retry-After': '1' } } : undefined) });
    const h = host({ server: s.url, reconnect: { baseMs: 1, maxMs: 5_000 } });
    const errors: Error[] = [];
    h.on('error', (e) => errors.push(e));
    const t0 = Date.now();
    await h.start();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(s.upgrades).toBe(2);
    // The fake server's body is the status text ("Too Many Requests").
    expect(errors.map((e) => e.message)).toEqual(['server refused the upgrade with HTTP 429: Too Many Requests']);
  });

  it('bounds a 429 wait by the backoff maximum', async () => {
    const s = await server({ refuse: (n) => (n === 0 ? { status: 429, headers: { 'Retry-After': '3600' } } : undefined) });
    const h = host({ server: s.url, reconnect: { baseMs: 1, maxMs: 20 } });
    h.on('error', () => {});
    await h.start();
    expect(s.upgrades).toBe(2);
  });

  it('retries HTTP 5xx with the backoff', async () => {
    const s = await server({ refuse: (n) => (n < 2 ? { status: n === 0 ? 503 : 500 } : undefined) });
    const h = host({ server: s.url, reconnect: { baseMs: 1, maxMs: 5 } });
    h.on('error', () => {});
    await h.start();
    expect(s.upgrades).toBe(3);
  });

  it('stops after one attempt on HTTP 403 (origin) and on another 4xx, saying so plainly', async () => {
    for (const [status, kind, text] of [
      [403, 'origin', 'refused this connection (HTTP 403): Forbidden'],
      [404, 'http', 'refused the upgrade with HTTP 404: Not Found; not retrying'],
    ] as const) {
      const s = await server({ refuse: () => ({ status }) });
      const h = host({ server: s.url, reconnect: { baseMs: 1, maxMs: 5 } });
      h.on('error', () => {});
      const stopped = new Promise<ServerRefusedError>((resolve) => h.once('stopped', (e) => resolve(e as ServerRefusedError)));
      await expect(h.start()).rejects.toThrow(ServerRefusedError);
      const error = await stopped;
      expect(error.kind).toBe(kind);
      expect(error.status).toBe(status);
      expect(error.message).toBe(`the server ${s.url} ${text}`);
      expect(s.upgrades).toBe(1);
    }
  });

  it('rejects start() on 401 or an unreachable server when reconnect is false', async () => {
    const s = await server({ tokens: ['other'] });
    await expect(host({ server: s.url, reconnect: false }).start()).rejects.toThrow(/HTTP 401/);
    const closedPort = await server();
    const url = closedPort.url;
    await closedPort.close();
    await expect(host({ server: url, reconnect: false }).start()).rejects.toThrow(/ECONNREFUSED/);
  });

  it('a server that accepts TCP but never answers the upgrade: the error names its URL and the timeout, not only "Opening handshake has timed out"', async () => {
    const sockets = new Set<Socket>();
    const silentServer = createServer((socket) => sockets.add(socket.on('error', () => {})));
    silentServer.listen(0, '127.0.0.1');
    await once(silentServer, 'listening');
    try {
      const url = `ws://127.0.0.1:${(silentServer.address() as AddressInfo).port}`;
      await expect(host({ server: url, reconnect: false, welcomeTimeoutMs: 200 }).start()).rejects.toThrow(
        `the server ${url} did not answer the WebSocket upgrade within 200 ms (is that address a toolwire server?)`,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      silentServer.close();
    }
  });

  it('close() kills running work, closes 1000, leaves no timer and does not reconnect', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = timers();
    const s = await server();
    const pidFile = join(dir, 'pid');
    const h = host({ server: s.url, cancelGraceMs: 200, drainMs: 100 })
      .command('slow', { inputSchema: object, command: ['sh', '-c', `trap "" TERM; echo $$ > ${pidFile}; while :; do sleep 0.05; done`] })
      .tool('hang', { inputSchema: object }, () => new Promise<string>(() => {}));
    await h.start();
    const conn = s.connections[0]!;
    conn.send(call('c1', 'slow'));
    conn.send(call('c2', 'hang'));
    const pid = await pidFrom(pidFile);
    const t0 = Date.now();
    await h.close();
    expect(Date.now() - t0).toBeLessThan(200 + 100 + 1000);
    expect((await conn.closed).code).toBe(1000);
    expect(isGone(pid)).toBe(true);
    expect(conn.frames.some((f) => f.type === 'result')).toBe(false);
    expect(s.connections).toHaveLength(1);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
    await expect(h.start()).rejects.toThrow(/closed/);
  });

  it('close() while retrying an unreachable server stops the retries and rejects start()', async () => {
    const gone = await FakeServer.start();
    const url = gone.url;
    await gone.close();
    const h = host({ server: url, reconnect: { baseMs: 1, maxMs: 5 } });
    const errors: Error[] = [];
    h.on('error', (e) => errors.push(e));
    const started = h.start();
    await poll(() => errors.length >= 3, 5000, 'three failed dials');
    await h.close();
    await expect(started).rejects.toThrow(/closed/);
    const count = errors.length;
    await new Promise((r) => setImmediate(r));
    expect(errors.length).toBe(count);
  });

  it('logs instead of emitting error when nobody listens for errors (a refusal at level error)', async () => {
    const errors: string[] = [];
    const warnings: string[] = [];
    const logger = {
      ...silent,
      debug() {},
      info() {},
      error: (_o: unknown, msg?: string) => void errors.push(String(msg)),
      warn: (_o: unknown, msg?: string) => void warnings.push(String(msg)),
    };
    const s = await server({ tokens: ['other'] });
    const h = new ToolHost({ server: s.url, token: 'tok', logger, reconnect: false });
    hosts.push(h);
    await expect(h.start()).rejects.toThrow(/401/);
    expect(errors).toEqual([`toolwire: the server ${s.url} did not accept this host's token (HTTP 401)`]);
    const busy = await server({ refuse: () => ({ status: 503 }) });
    const h2 = new ToolHost({ server: busy.url, token: 'tok', logger, reconnect: false });
    hosts.push(h2);
    await expect(h2.start()).rejects.toThrow(/503/);
    expect(warnings.some((w) => w.includes('HTTP 503'))).toBe(true);
  });
});
