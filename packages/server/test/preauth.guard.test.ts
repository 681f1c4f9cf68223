/**
 * Issue 11 §2 — unauthenticated connections are bounded: caps in total and per address (the oldest
 * is closed), a time limit from accept to authentication, bodies of refused requests never read;
 * authenticated hosts and callers are never counted, timed or closed by it. Real server on
 * 127.0.0.1 port 0, real TCP sockets (from 127.0.0.x source addresses to look like several peers).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, type IncomingMessage, request } from 'node:http';
import { request as requestTls } from 'node:https';
import { type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { slowloris } from '../../../test/soak/attacks/slowloris.js';
import { ALPHA, CALLER, cleanups, drainCleanups, start } from './security.harness.js';

afterEach(drainCleanups);

/** Poll `check` until true, at most `ms`. */
async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolves at `socket`'s 'close' (unlike `events.once`, not rejected by an ECONNRESET 'error' first: the server closing on a writer resets). */
const closeOf = (socket: Socket): Promise<void> => new Promise((resolve) => socket.once('close', () => resolve()));

/** A raw TCP connection to `port` from `localAddress`, open; `closed` resolves with ms since connect when the server closes it. */
async function raw(port: number, localAddress = '127.0.0.1'): Promise<{ socket: Socket; closed: Promise<number>; received: () => string }> {
  const socket = connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => {});
  cleanups.push(() => void socket.destroy());
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  await once(socket, 'connect');
  const at = Date.now();
  const closed = closeOf(socket).then(() => Date.now() - at);
  return { socket, closed, received: () => data };
}

/** Open `localAddress` connections one after another, each counted by the server before the next (so the server's order is ours). */
async function openInOrder(server: { preAuth: { stats(): { accepted: number } } }, port: number, addresses: string[]) {
  const out = [];
  for (const address of addresses) {
    const before = server.preAuth.stats().accepted;
    out.push(await raw(port, address));
    await until(() => server.preAuth.stats().accepted > before, 'the server to accept');
  }
  return out;
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
});

/** POST an MCP initialize with the caller token through `agent`; resolves with the response (body read) and whether the socket was reused. */
async function initialize(mcpUrl: string, agent?: Agent): Promise<{ status: number; reused: boolean; socket: Socket }> {
  const req = request(mcpUrl, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${CALLER}` },
  });
  req.end(INIT);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  res.resume();
  await once(res, 'end');
  return { status: res.statusCode!, reused: req.reusedSocket, socket: req.socket! };
}

describe('time to authenticate', () => {
  it('closes a connection that sends nothing at preAuthTimeoutMs', async () => {
    const s = await start({ preAuthTimeoutMs: 300 });
    const c = await raw(s.port);
    const ms = await c.closed;
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(3_000);
    expect(s.server.preAuth.stats()).toMatchObject({ pending: 0, timedOut: 1 });
  });

  it('closes a connection whose headers trickle in (never idle) at preAuthTimeoutMs', async () => {
    const s = await start({ preAuthTimeoutMs: 300 });
    const c = await raw(s.port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    let n = 0;
    const trickle = setInterval(() => c.socket.write(`X-${n++}: y\r\n`), 20);
    try {
      expect(await c.closed).toBeLessThan(3_000);
    } finally {
      clearInterval(trickle);
    }
    expect(n).toBeGreaterThan(5); // it was not idle
    expect(s.server.preAuth.stats().timedOut).toBe(1);
  });

  it('closes an idle keep-alive connection that only asked /healthz (unauthenticated) at preAuthTimeoutMs', async () => {
    const s = await start({ preAuthTimeoutMs: 300 });
    const c = await raw(s.port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expect(await c.closed).toBeLessThan(3_000);
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 OK/);
  });

  it('never times out a caller whose keep-alive connection authenticated, nor a host', async () => {
    const s = await start({ preAuthTimeoutMs: 300, keepAliveTimeoutMs: 10_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(() => agent.destroy());
    const first = await initialize(s.mcpUrl, agent);
    expect(first.status).toBe(200);
    const host = new WebSocket(s.url, { headers: { authorization: `Bearer ${ALPHA}` } });
    host.on('error', () => {});
    cleanups.push(() => host.terminate());
    await once(host, 'open');
    // A witness opened now is closed at its deadline; by then the two above have passed theirs too.
    const witness = await raw(s.port);
    await witness.closed;
    const second = await initialize(s.mcpUrl, agent);
    expect(second).toMatchObject({ status: 200, reused: true });
    expect(second.socket).toBe(first.socket);
    expect(host.readyState).toBe(WebSocket.OPEN);
    const welcome = once(host, 'message');
    host.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'test' }));
    expect(JSON.parse(String((await welcome)[0])).type).toBe('welcome');
    expect(s.server.preAuth.stats()).toMatchObject({ authenticated: 2, timedOut: 1 });
  });
});

describe('unauthenticated bodies', () => {
  it('answers a request without a token before its body arrives, then closes the connection without reading the body', async () => {
    const s = await start(); // preAuthTimeoutMs 10 s: the close below is not the timeout
    const c = await raw(s.port);
    c.socket.write(`POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"pad":"`);
    expect(await c.closed).toBeLessThan(3_000);
    expect(c.received()).toMatch(/^HTTP\/1\.1 401 Unauthorized/);
    expect(s.server.preAuth.stats()).toMatchObject({ pending: 0, bodiesRefused: 1, timedOut: 0 });
  });

  it('keeps reading the body of a caller with a valid token (slow, within requestTimeoutMs)', async () => {
    const s = await start({ preAuthTimeoutMs: 300 });
    const req = request(s.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${CALLER}`,
        'content-length': Buffer.byteLength(INIT),
      },
    });
    req.write(INIT.slice(0, 10));
    const witness = await raw(s.port);
    await witness.closed; // past the pre-auth deadline
    req.end(INIT.slice(10));
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    expect(res.statusCode).toBe(200);
    expect(s.server.preAuth.stats().bodiesRefused).toBe(0);
  });
});

describe('caps', () => {
  it('per address: a new connection over maxPreAuthPerAddress closes that address’s oldest; other addresses keep theirs', async () => {
    const s = await start({ maxPreAuthPerAddress: 2, maxPreAuthConnections: 10 });
    const [a1, a2, b1] = await openInOrder(s.server, s.port, ['127.0.0.2', '127.0.0.2', '127.0.0.3']);
    let a2Closed = false;
    void a2!.closed.then(() => (a2Closed = true));
    let b1Closed = false;
    void b1!.closed.then(() => (b1Closed = true));
    await openInOrder(s.server, s.port, ['127.0.0.2']);
    await a1!.closed;
    expect(s.server.preAuth.stats()).toMatchObject({ pending: 3, evicted: 1 });
    expect(a2Closed || b1Closed).toBe(false);
  });

  it('in total: a new connection over maxPreAuthConnections closes the oldest of the address holding the most, not an older single one', async () => {
    const s = await start({ maxPreAuthPerAddress: 10, maxPreAuthConnections: 4 });
    const [single, heavy1] = await openInOrder(s.server, s.port, ['127.0.0.2', '127.0.0.3', '127.0.0.3', '127.0.0.3']);
    let singleClosed = false;
    void single!.closed.then(() => (singleClosed = true));
    await openInOrder(s.server, s.port, ['127.0.0.4']);
    await heavy1!.closed;
    expect(s.server.preAuth.stats()).toMatchObject({ pending: 4, evicted: 1 });
    expect(singleClosed).toBe(false);
  });

  it('in total, among addresses holding one each: the oldest is closed', async () => {
    const s = await start({ maxPreAuthPerAddress: 5, maxPreAuthConnections: 3 });
    const [oldest] = await openInOrder(s.server, s.port, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
    await openInOrder(s.server, s.port, ['127.0.0.5']);
    await oldest!.closed;
    expect(s.server.preAuth.stats()).toMatchObject({ pending: 3, evicted: 1 });
  });

  it('a slowloris of headers, bodies and upgrades holding the caps does not stop a caller or a host from connecting', async () => {
    const s = await start({ maxPreAuthConnections: 16, maxPreAuthPerAddress: 4 });
    const stop = new AbortController();
    const sources = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'];
    const attack = slowloris({ url: s.url, durationMs: 30_000, connections: 30, trickleMs: 100, reopenMs: 100, localAddresses: sources, signal: stop.signal });
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, s.server.preAuth.stats().pending)), 5);
    try {
      await until(() => s.server.preAuth.stats().evicted > 100, 'the attack to fill the caps', 15_000);
      for (let i = 0; i < 5; i++) expect((await initialize(s.mcpUrl)).status).toBe(200);
      const host = new WebSocket(s.url, { headers: { authorization: `Bearer ${ALPHA}` } });
      host.on('error', () => {});
      cleanups.push(() => host.terminate());
      await once(host, 'open');
    } finally {
      stop.abort();
      clearInterval(watch);
    }
    const report = await attack;
    expect(peak).toBeLessThanOrEqual(16);
    for (const kind of ['headers', 'bodies', 'upgrades'] as const) expect(report.byKind[kind].closedByServer).toBeGreaterThan(0);
    expect(report.byKind.bodies.answered).toBeGreaterThan(0); // 401 (or 429), then closed
  });
});

describe.runIf(spawnSync('openssl', ['version']).status === 0)('under TLS', () => {
  /** A self-signed certificate for 127.0.0.1 and its key, made with the openssl CLI. */
  function certificate(): { cert: Buffer; key: Buffer } {
    const dir = mkdtempSync(join(tmpdir(), 'toolwire-preauth-tls-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    execFileSync('openssl', ['req', '-x509', ...ec, '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
    return { cert: readFileSync(cert), key: readFileSync(key) };
  }

  it('counts the TCP connection from accept (handshake included) and lets it go when a request on the TLS socket authenticates', async () => {
    const s = await start({ preAuthTimeoutMs: 300, tls: certificate() });
    const req = requestTls(s.mcpUrl, {
      method: 'POST',
      rejectUnauthorized: false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${CALLER}` },
    });
    req.end(INIT);
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    await once(res, 'end');
    expect(res.statusCode).toBe(200);
    expect(s.server.preAuth.stats()).toMatchObject({ accepted: 1, authenticated: 1, pending: 0 });
    const silent = connectTls({ port: s.port, host: '127.0.0.1', rejectUnauthorized: false }); // handshakes, then says nothing
    silent.on('error', () => {});
    cleanups.push(() => void silent.destroy());
    await closeOf(silent);
    expect(s.server.preAuth.stats()).toMatchObject({ accepted: 2, timedOut: 1, pending: 0 });
  });

  it('answers a request on the TLS socket without a token before its body arrives, then closes the connection', async () => {
    const s = await start({ tls: certificate() }); // preAuthTimeoutMs 10 s: the close below is not the timeout
    const c = connectTls({ port: s.port, host: '127.0.0.1', rejectUnauthorized: false });
    c.on('error', () => {});
    cleanups.push(() => void c.destroy());
    let received = '';
    c.on('data', (d: Buffer) => (received += d.toString('latin1')));
    await once(c, 'secureConnect');
    const at = Date.now();
    c.write(`POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"pad":"`);
    await closeOf(c);
    expect(Date.now() - at).toBeLessThan(3_000);
    expect(received).toMatch(/^HTTP\/1\.1 401 Unauthorized/);
    expect(s.server.preAuth.stats()).toMatchObject({ accepted: 1, pending: 0, bodiesRefused: 1, timedOut: 0 });
  });
});

describe('shutdown', () => {
  it('close() closes the connections still unauthenticated', async () => {
    const s = await start();
    const c = await raw(s.port);
    await until(() => s.server.preAuth.stats().pending === 1, 'the server to accept');
    await s.server.close();
    await c.closed;
    expect(s.server.preAuth.stats().pending).toBe(0);
  });
});

describe('node:http knobs', () => {
  it('answers 431 to a request head over maxHeaderBytes', async () => {
    const s = await start({ maxHeaderBytes: 1024 });
    const c = await raw(s.port);
    c.socket.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(2048)}\r\n\r\n`);
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 431/);
  });

  it('answers 408 to headers slower than headersTimeoutMs, even with a generous preAuthTimeoutMs', async () => {
    const s = await start({ headersTimeoutMs: 300, preAuthTimeoutMs: 60_000 });
    const c = await raw(s.port);
    c.socket.write('GET /healthz HTTP/1.1\r\n');
    expect(await c.closed).toBeLessThan(5_000);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes an authenticated connection idle for keepAliveTimeoutMs', async () => {
    const s = await start({ keepAliveTimeoutMs: 200 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanups.push(() => agent.destroy());
    const { socket } = await initialize(s.mcpUrl, agent);
    const at = Date.now();
    if (!socket.destroyed) await closeOf(socket);
    expect(Date.now() - at).toBeLessThan(3_000);
  });
});
