/**
 * When the server refuses what the host sent (a wrong-shape hello or advertise → close 1002 with the
 * ajv reason), the close reason is the only place the host learns why: it is logged at level error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Logger, ToolHost } from '../src/index.js';
import { FakeServer } from './helpers/fake-server.js';
import { poll } from './helpers/process.js';

interface Entry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: unknown;
}

function recordingLogger(): { logger: Logger; entries: Entry[] } {
  const entries: Entry[] = [];
  const at = (level: Entry['level']) => (obj: unknown, msg?: unknown) =>
    void entries.push({ level, obj: typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>) : {}, msg: msg ?? obj });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries };
}

const servers: FakeServer[] = [];
const hosts: ToolHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('the server closes the connection with a reason', () => {
  it('after advertise (close 1002): the reason is logged at level error', async () => {
    const s = await FakeServer.start({ auto: false });
    servers.push(s);
    const log = recordingLogger();
    const h = new ToolHost({ server: s.url, token: 'tok', logger: log.logger, reconnect: false }).tool('t', { inputSchema: { type: 'object' } }, () => '');
    hosts.push(h);
    void h.start().catch(() => {});
    const conn = await s.nextConnection();
    await conn.next('hello');
    conn.send({ type: 'welcome', protocol: 1, host: 'h', heartbeatMs: 10_000, limits: { maxPayload: 1 << 20, maxInFlight: 8, maxTools: 8 } });
    await conn.next('advertise');
    const reason = 'advertise: / must NOT have additional properties ("extra")';
    conn.ws.close(1002, reason);
    const entry = await poll(() => log.entries.find((e) => e.level === 'error' && e.obj.reason === reason), 5_000, 'the error log line');
    expect(entry.obj).toMatchObject({ code: 1002, name: 'PROTOCOL_ERROR' });
    expect(entry.msg).toBe(`toolwire: the server closed the connection: close 1002 PROTOCOL_ERROR: ${reason}`);
  });

  it('before welcome (a refused hello): logged at level error, and start() rejects naming the reason', async () => {
    const s = await FakeServer.start({ auto: false });
    servers.push(s);
    const log = recordingLogger();
    const h = new ToolHost({ server: s.url, token: 'tok', logger: log.logger, reconnect: false });
    hosts.push(h);
    const started = h.start();
    const conn = await s.nextConnection();
    await conn.next('hello');
    const reason = 'hello: / must NOT have additional properties ("extra")';
    conn.ws.close(1002, reason);
    await expect(started).rejects.toThrow(`connection closed before welcome (close 1002 PROTOCOL_ERROR: ${reason})`);
    expect(log.entries.some((e) => e.level === 'error' && e.obj.reason === reason)).toBe(true);
  });

  it('an orderly close (1000/1001) stays at level info', async () => {
    const s = await FakeServer.start();
    servers.push(s);
    const log = recordingLogger();
    const h = new ToolHost({ server: s.url, token: 'tok', logger: log.logger, reconnect: false });
    hosts.push(h);
    await h.start();
    s.connections[0]!.ws.close(1001, 'server shutting down');
    await poll(() => log.entries.some((e) => e.msg === 'toolwire: disconnected'), 5_000, 'the disconnect log line');
    expect(log.entries.filter((e) => e.level === 'error')).toEqual([]);
  });
});
