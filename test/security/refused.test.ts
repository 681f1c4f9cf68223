/**
 * Issue 10 §4–§5 — a refused host stops, and wrong tokens do not lock out right ones. Real
 * processes on 127.0.0.1 port 0: `toolwire serve --config`, `toolwire host`, `toolwire tools`/`call`.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, finish, repoRoot, spawnTs, tempDir, waitFor } from '../helpers.js';

afterEach(cleanup);

const MANIFEST = join(repoRoot, 'examples', 'tools.json');
const WRONG = 'wrong-token-never-printed-0123456789';

/** Resolves with the first match of `pattern` in the child's stdout (bounded). */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout: ${out}`)), timeoutMs);
    child.stdout!.on('data', (d: string) => {
      out += d;
      const match = pattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before ${pattern}; stdout: ${out}`));
    });
  });
}

/** A `toolwire serve` process with host `alpha` and caller `agent`; its ws:// and http:// base URLs. */
async function serve(): Promise<{ ws: string; http: string; home: Record<string, string> }> {
  const dir = await tempDir();
  const config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }] }));
  const home = { TOOLWIRE_HOME: dir };
  const child = spawnTs([cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--log-level', 'warn'], home);
  child.stderr!.resume();
  const [, ws] = await waitForOutput(child, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)/);
  return { ws: ws!, http: ws!.replace('ws://', 'http://'), home };
}

/** The server's `toolwire_auth_failures_total` counter, read from its /metrics as the caller. */
async function authFailures(http: string): Promise<number> {
  const res = await fetch(`${http}/metrics`, { headers: { authorization: `Bearer ${CALLER_TOKEN}` } });
  expect(res.status).toBe(200);
  const match = /^toolwire_auth_failures_total(?:\{[^}]*\})? (\d+)$/m.exec(await res.text());
  if (match === null) throw new Error('no toolwire_auth_failures_total in /metrics');
  return Number(match[1]);
}

/** One host upgrade with `token`; resolves with the refusal's status, or 101 once open (then closed). */
async function dial(url: string, token: string): Promise<number> {
  const ws = new WebSocket(url, 'toolwire.v1', { headers: { authorization: `Bearer ${token}` } });
  ws.on('error', () => {});
  const status = await Promise.race([
    once(ws, 'open').then(() => 101),
    once(ws, 'unexpected-response').then(([, res]) => {
      (res as IncomingMessage).resume();
      return (res as IncomingMessage).statusCode!;
    }),
  ]);
  ws.terminate();
  return status;
}

describe('a refused host stops', () => {
  it('toolwire host with a wrong token exits 77 after its first attempt (no retry), saying the server did not accept the token', async () => {
    const s = await serve();
    // The bound is for a hang only (it includes tsx's start-up); "no retry" is the server's count below.
    const host = await finish(
      spawnTs([cliPath, 'host', '--server', s.ws, '--manifest', MANIFEST, '--log-level', 'silent'], { ...s.home, TOOLWIRE_TOKEN: WRONG }),
      30_000,
    );
    expect(host.code).toBe(77);
    expect(await authFailures(s.http)).toBe(1);
    expect(host.stderr).toBe(`toolwire: the server ${s.ws} did not accept this host's token (HTTP 401)\n`);
    expect(host.stderr + host.stdout).not.toContain(WRONG);
  });
});

describe('a refused host stops even while its address is throttled', () => {
  it('a wrong-token host from a throttled address gets a challenged 429 and exits 77 at once, naming the reason', async () => {
    const s = await serve();
    const statuses: number[] = [];
    // 10 failures start the throttle (1 s); each further one doubles it: 16 give a block of about a minute.
    for (let i = 0; i < 16; i++) statuses.push(await dial(s.ws, `${WRONG}-${i}`));
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(6).fill(429)]);
    const host = await finish(
      spawnTs([cliPath, 'host', '--server', s.ws, '--manifest', MANIFEST, '--log-level', 'silent'], { ...s.home, TOOLWIRE_TOKEN: WRONG }),
      5_000,
    );
    expect(host.code).toBe(77);
    expect(host.stderr).toMatch(
      new RegExp(
        `^toolwire: the server ${s.ws} did not accept this host's token \\(HTTP 429: too many failed authentications from this address; retry after \\d+ s\\)\\n$`,
      ),
    );
    expect(host.stderr + host.stdout).not.toContain(WRONG);
  });

  it('a 429 for a valid token (too many connections of one identity) carries no challenge: the host waits and retries', async () => {
    const s = await serve();
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const opened: WebSocket[] = [];
      const next = (): void => {
        const ws = new WebSocket(s.ws, 'toolwire.v1', { headers: { authorization: `Bearer ${HOST_TOKEN}` } });
        ws.on('error', () => {});
        ws.once('open', () => {
          opened.push(ws);
          next();
        });
        ws.once('unexpected-response', (_req, r) => {
          r.resume();
          for (const o of opened) o.terminate();
          resolve(r);
        });
        if (opened.length > 16) reject(new Error('no 429 after 16 connections of one identity'));
      };
      next();
    });
    expect(res.statusCode).toBe(429);
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers['retry-after']).toBeDefined();
  });
});

describe('wrong tokens do not lock out right ones', () => {
  it('after 20 bad host attempts from this address a valid host connects and a valid caller lists and calls; a wrong caller gets 75 with the reason', async () => {
    const s = await serve();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push(await dial(s.ws, `${WRONG}-${i}`));
    expect(statuses.slice(0, 10).every((st) => st === 401)).toBe(true);
    expect(statuses.slice(10).every((st) => st === 429)).toBe(true); // throttled: authMaxFailures is 10

    const host = spawnTs([cliPath, 'host', '--server', s.ws, '--token', HOST_TOKEN, '--manifest', MANIFEST, '--root', repoRoot, '--log-level', 'warn'], s.home);
    host.stderr!.resume();
    await waitFor(async () => ((await (await fetch(`${s.http}/healthz`)).json()) as { tools: number }).tools > 0, 'the valid host to advertise', 15_000);

    const tools = await finish(spawnTs([cliPath, 'tools', '--server', s.http, '--token', CALLER_TOKEN], s.home));
    expect(tools.stderr).toBe('');
    expect(tools.code).toBe(0);
    expect(tools.stdout).toMatch(/^alpha__read_file\b/m);
    const call = await finish(spawnTs([cliPath, 'call', 'alpha__read_file', '{"path":"README.md"}', '--server', s.http, '--token', CALLER_TOKEN], s.home));
    expect(call.stderr).toBe('');
    expect(call.code).toBe(0);
    expect(call.stdout).toBe(await readFile(join(repoRoot, 'README.md'), 'utf8'));

    // Still throttled for failures: a wrong caller token is refused for now, with the server's reason.
    const wrong = await finish(spawnTs([cliPath, 'tools', '--server', s.http, '--token', WRONG], s.home));
    expect(wrong.code).toBe(75);
    expect(wrong.stderr).toMatch(new RegExp(`^toolwire: refused by ${s.http}/mcp: too many failed authentications from this address; retry after \\d+ s\\n$`));
    expect(wrong.stderr).not.toContain(WRONG);
    const wrongCall = await finish(spawnTs([cliPath, 'call', 'alpha__read_file', '{"path":"README.md"}', '--server', s.http, '--token', WRONG], s.home));
    expect(wrongCall.code).toBe(75);
    expect(wrongCall.stderr).toMatch(/^toolwire: refused by .*: too many failed authentications from this address; retry after \d+ s\n$/);
  });
});
