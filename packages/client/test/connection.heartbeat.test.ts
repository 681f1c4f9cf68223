/**
 * The host's silence watchdog (DESIGN §6): the server is presumed dead after
 * `silenceLimitMs(heartbeatMs)` without a ping or a frame, and only then.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { type Logger, ToolHost } from '../src/index.js';
import { silenceLimitMs } from '../src/connection/host-socket.js';
import { type FakeConnection, FakeServer } from './helpers/fake-server.js';

const servers: FakeServer[] = [];
const hosts: ToolHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function warnings(): { logger: Logger; lines: unknown[] } {
  const lines: unknown[] = [];
  const ignore = (): void => {};
  return { logger: { debug: ignore, info: ignore, warn: (obj: unknown, msg?: unknown) => void lines.push(msg ?? obj), error: ignore }, lines };
}

/** A host connected to a fake server that welcomed it with `heartbeatMs` and has read its advertise (the host's watchdog runs from the welcome). */
async function welcomedHost(heartbeatMs: number): Promise<{ conn: FakeConnection; log: ReturnType<typeof warnings> }> {
  const s = await FakeServer.start({ auto: false });
  servers.push(s);
  const log = warnings();
  const h = new ToolHost({ server: s.url, token: 'tok', logger: log.logger, reconnect: false }).tool('t', { inputSchema: { type: 'object' } }, () => '');
  hosts.push(h);
  void h.start().catch(() => {});
  const conn = await s.nextConnection();
  await conn.next('hello');
  conn.send({ type: 'welcome', protocol: 1, host: 'h', heartbeatMs, limits: { maxPayload: 1 << 20, maxInFlight: 8, maxTools: 8 } });
  await conn.next('advertise');
  return { conn, log };
}

describe('the silence watchdog', () => {
  it('keeps the connection when a ping came while the host’s event loop was stalled past the limit (the late timer judges after the reads)', async () => {
    const heartbeatMs = 100;
    const { conn, log } = await welcomedHost(heartbeatMs);
    // The ping reaches the host's socket at once; then this process — the host's too — stalls past
    // the silence limit before the host reads it. When the loop runs again its timers come first.
    conn.ws.ping();
    for (const until = performance.now() + silenceLimitMs(heartbeatMs) + 100; performance.now() < until;);
    // Alive: the host answers the next ping (ws answers pings by itself) instead of having closed.
    const pong = once(conn.ws, 'pong');
    conn.ws.ping();
    const outcome = await Promise.race([pong.then(() => 'pong'), once(conn.ws, 'close').then(() => 'closed')]);
    expect(outcome).toBe('pong');
    expect(log.lines).not.toContain('toolwire: no heartbeat from the server; reconnecting');
  });

  it('still ends a connection whose server goes silent: after the limit, not before', async () => {
    const heartbeatMs = 50;
    const { conn, log } = await welcomedHost(heartbeatMs);
    const began = performance.now();
    await once(conn.ws, 'close');
    expect(performance.now() - began).toBeGreaterThanOrEqual(silenceLimitMs(heartbeatMs) - 50); // the advertise came a little after the host's clock began
    expect(log.lines).toContain('toolwire: no heartbeat from the server; reconnecting');
  });
});
