/**
 * Two tool hosts with the same token: the server closes the older connection with 4000 (REPLACED).
 * The older host must stop there — reconnecting would replace the newer one in turn, and the two
 * would flap forever. Against a real ToolwireServer on 127.0.0.1; connections counted on its side.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostCommand } from '../src/commands/host.js';
import { HostReplacedError, type Logger, ToolHost } from '@toolwire/client';
import { testIO } from './helpers/cli-io.js';
import { poll } from '../../client/test/helpers/process.js';

const TOKEN = 'alpha-token-0123456789';
const REPLACED = 'replaced by a newer connection of the same host identity: another host is using this token';
const silent = pino({ level: 'silent' });
/** Reconnect backoff of the hosts under test: a flapping host would redial within 20 ms. */
const FAST = { baseMs: 5, maxMs: 20 };
/** How long "no more connections" is watched: 30 backoff ceilings. */
const QUIET_WINDOW_MS = 30 * FAST.maxMs;

interface Entry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: unknown;
  msg: unknown;
}

function recordingLogger(): { logger: Logger; entries: Entry[] } {
  const entries: Entry[] = [];
  const at = (level: Entry['level']) => (obj: unknown, msg?: unknown) => void entries.push({ level, obj, msg });
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries };
}

let server: ToolwireServer;
let serverLog: ReturnType<typeof recordingLogger>;
let url: string;
const hosts: ToolHost[] = [];
let dir: string;

/** Host sessions the server accepted (`hello` → `welcome`) so far. */
const connections = () => serverLog.entries.filter((e) => e.msg === 'host connected').length;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-replaced-'));
  serverLog = recordingLogger();
  server = new ToolwireServer({ hosts: [{ name: 'alpha', token: TOKEN }], logger: serverLog.logger });
  ({ url } = await server.listen(0, '127.0.0.1'));
});
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function host(answer: string, logger: Logger = silent): ToolHost {
  const h = new ToolHost({ server: url, token: TOKEN, logger, reconnect: FAST }).tool('who', { inputSchema: { type: 'object' } }, () => answer);
  hosts.push(h);
  return h;
}

/** Call alpha__who through the server's router; the answering host's stdout. */
async function who(): Promise<string> {
  const capture = await server.router.route({ id: 'c', name: 'alpha__who', input: {}, workspace: '', agent: 'agent', signal: new AbortController().signal });
  return Buffer.from(capture!.stdout).toString('utf8');
}

/** Watch for QUIET_WINDOW_MS that the server accepts no further host connection. */
async function expectNoMoreConnections(count: number): Promise<void> {
  const until = Date.now() + QUIET_WINDOW_MS;
  while (Date.now() < until) {
    expect(connections()).toBe(count);
    await new Promise((r) => setTimeout(r, 10));
  }
  expect(connections()).toBe(count);
}

describe('a host replaced by a newer connection with its token (close 4000)', () => {
  it('the newer host wins; the older emits HostReplacedError and never reconnects (no flapping)', async () => {
    const older = host('older');
    await older.start();
    const errors: Error[] = [];
    older.on('error', (e) => errors.push(e));
    const disconnected = new Promise<{ code: number }>((resolve) => older.once('disconnected', resolve));
    const newer = host('newer');
    await newer.start();
    expect((await disconnected).code).toBe(4000);
    await poll(() => errors.length > 0, 5_000, 'the older host to report the replacement');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(HostReplacedError);
    expect(errors[0]!.message).toBe(REPLACED);
    await expectNoMoreConnections(2);
    expect(await who()).toBe('newer');
  });

  it('with no error listener, the older host logs the cause at level error', async () => {
    const log = recordingLogger();
    await host('older', log.logger).start();
    await host('newer').start();
    const entry = await poll(() => log.entries.find((e) => e.level === 'error' && String(e.msg).includes(REPLACED)), 5_000, 'the error log line');
    expect(entry.msg).toBe(`toolwire: ${REPLACED}`);
    await expectNoMoreConnections(2);
  });

  it('toolwire host exits 69 with the cause as its last stderr line', async () => {
    const manifest = join(dir, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { who: { input_schema: { type: 'object' }, command: ['echo', 'cli'] } } }));
    const io = testIO({ TOOLWIRE_HOME: dir });
    const running = hostCommand(['--manifest', manifest, '--server', url, '--token', TOKEN], io, { logger: silent });
    try {
      await poll(() => server.router.tools().some((t) => t.name === 'alpha__who'), 10_000, 'the CLI host to advertise');
      expect(await who()).toBe('cli\n');
      await host('newer').start();
      expect(await running).toBe(69);
      expect(io.err()).toBe(`toolwire: ${REPLACED}\n`);
      await expectNoMoreConnections(2);
      expect(await who()).toBe('newer');
    } finally {
      io.signals.emit('SIGTERM');
      await running;
    }
  });
});
