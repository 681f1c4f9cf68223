/**
 * Issue 10 §1, §2, §6 — lasting server state and `toolwire token`: real `toolwire serve` processes on
 * port 0 over a temporary state folder, real `toolwire token` and `toolwire host` processes.
 */
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { WebSocket } from 'ws';
import { serveCommand, tokenCommand } from '@toolwire/cli';
import { cleanup, cliPath, finish, nextFrame, rawHost, repoRoot, spawnTs, tempDir, waitForText } from './helpers.js';

afterEach(cleanup);

async function serve(home: string, extra: string[] = []): Promise<{ serve: ChildProcess; url: string; banner: string }> {
  const child = spawnTs([cliPath, 'serve', '--listen', '127.0.0.1:0', ...extra], { TOOLWIRE_HOME: home });
  const [banner, url] = await waitForText(child.stdout!, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)[\s\S]*credentials written/);
  return { serve: child, url: url!, banner };
}

async function stopServe(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = (await exited) as [number];
  expect(code).toBe(0);
}

function token(home: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return finish(spawnTs([cliPath, 'token', ...args], { TOOLWIRE_HOME: home }));
}

/** The token `token add` printed (the indented line after the heading). */
function printedToken(stdout: string): string {
  const match = /shown once[^\n]*\n {2}(\S+)\n/.exec(stdout);
  if (!match) throw new Error(`no token in: ${stdout}`);
  return match[1]!;
}

/** Open a raw host connection and wait for its welcome. */
async function welcomed(url: string, bearer: string): Promise<WebSocket> {
  const ws = await rawHost(url, bearer);
  const welcome = nextFrame(ws, 'welcome');
  ws.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'test' }));
  await welcome;
  return ws;
}

/** `toolwire token ARGS` in this process (the bad-input cases need no server). */
async function tokenHere(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough().setEncoding('utf8');
  const err = new PassThrough().setEncoding('utf8');
  let stdout = '';
  let stderr = '';
  out.on('data', (d: string) => (stdout += d));
  err.on('data', (d: string) => (stderr += d));
  const code = await tokenCommand(args, { stdout: out, stderr: err, env });
  return { code, stdout, stderr };
}

describe('the state folder', () => {
  // This test and the next start five or six `toolwire` processes (tsx) one after another: a bound for a loaded machine.
  it('tokens survive a server restart: local, cli and a token made by token add host; only digests are stored', { timeout: 60_000 }, async () => {
    const home = await tempDir();
    const first = await serve(home);
    const creds1 = JSON.parse(await readFile(join(home, 'credentials.json'), 'utf8')) as { host: { token: string }; caller: { token: string } };
    const added = await token(home, ['add', 'host', 'laptop']);
    expect(added.code).toBe(0);
    const laptop = printedToken(added.stdout);
    // The server of `serve` without --listen-to-the-network: the printed command would not reach it from another machine.
    expect(added.stdout).toMatch(/the server of \S+ listens on 127\.0\.0\.1 only: another machine cannot reach it there/);
    await stopServe(first.serve);

    const second = await serve(home);
    const creds2 = JSON.parse(await readFile(join(home, 'credentials.json'), 'utf8')) as { host: { token: string }; caller: { token: string } };
    expect(creds2.host.token).toBe(creds1.host.token);
    expect(creds2.caller.token).toBe(creds1.caller.token);
    // A token is shown once, by the start that made it; later starts name the credentials file.
    expect(first.banner).toContain(creds1.host.token);
    expect(first.banner).toContain(creds1.caller.token);
    for (const secret of [creds1.host.token, creds1.caller.token]) expect(second.banner).not.toContain(secret);
    expect(second.banner).toMatch(/host token for host "local": in the credentials file below/);

    // The token made before the restart still opens a host session, as does the local one.
    const ws = await welcomed(second.url, laptop);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    await welcomed(second.url, creds1.host.token);

    const tokens = await readFile(join(home, 'tokens.json'), 'utf8');
    for (const secret of [laptop, creds1.host.token, creds1.caller.token]) expect(tokens).not.toContain(secret);
    expect((await stat(join(home, 'tokens.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(home)).mode & 0o777).toBe(0o700);

    // The caller token keeps working too: `tools` through the credentials file.
    const tools = await finish(spawnTs([cliPath, 'tools', '--json'], { TOOLWIRE_HOME: home }));
    expect(tools.code).toBe(0);
    await stopServe(second.serve);

    const list = await token(home, ['list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^laptop\s+host\s+\S+\s+20\d\d-/m); // last seen recorded at shutdown
    expect(list.stdout).toMatch(/^cli\s+caller/m);
    for (const secret of [laptop, creds1.host.token, creds1.caller.token]) expect(list.stdout).not.toContain(secret);
  });

  it(
    'token add host, then a toolwire host with that token in --token-file connects; token revoke closes its session 1008 within 1 s',
    { timeout: 60_000 },
    async () => {
      const home = await tempDir();
      const { url } = await serve(home);
      const added = await token(home, ['add', 'host', 'laptop', '--server', url]);
      expect(added.code).toBe(0);
      expect(added.stdout).toContain(`toolwire host --server ${url} --token-file ~/.toolwire/host-token --manifest tools.json`);
      expect(added.stdout).toContain('umask 077');
      const laptop = printedToken(added.stdout);

      // The running server picked the new token up without a restart: a real tool host connects, its
      // token in a file only its user can read, as `token add host` told.
      const tokenFile = join(home, 'host-token');
      await writeFile(tokenFile, `${laptop}\n`, { mode: 0o600 });
      const host = spawnTs([cliPath, 'host', '--server', url, '--token-file', tokenFile, '--manifest', join(repoRoot, 'examples', 'tools.json')], {
        TOOLWIRE_HOME: join(home, 'elsewhere'),
      });
      await waitForText(host.stderr!, /"host":"laptop"[^\n]*toolwire: connected/);

      // A second connection of laptop, raw, to time the revoke.
      const raw = await welcomed(url, laptop);
      const closed = once(raw, 'close') as Promise<[number, Buffer]>;
      const revoked = await token(home, ['revoke', 'laptop']);
      expect(revoked.code).toBe(0);
      const started = Date.now();
      const [code, reason] = await closed;
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(code).toBe(1008);
      expect(reason.toString()).toContain('revoked');

      // The revoked token is refused from now on.
      const again = new WebSocket(url, { headers: { authorization: `Bearer ${laptop}` } });
      const [, response] = (await once(again, 'unexpected-response')) as [unknown, { statusCode: number }];
      expect(response.statusCode).toBe(401);
      again.on('error', () => {});
      again.terminate();
    },
  );

  it('token revoke of a caller while its toolwire call runs: the call is stopped and the CLI exits 130 with the answer', { timeout: 60_000 }, async () => {
    const home = await tempDir();
    const { url } = await serve(home);
    const added = await token(home, ['add', 'host', 'laptop', '--server', url]);
    const tokenFile = join(home, 'host-token');
    await writeFile(tokenFile, `${printedToken(added.stdout)}\n`, { mode: 0o600 });
    const host = spawnTs([cliPath, 'host', '--server', url, '--token-file', tokenFile, '--manifest', join(repoRoot, 'examples', 'tools.json')], {
      TOOLWIRE_HOME: join(home, 'elsewhere'),
    });
    await waitForText(host.stderr!, /"host":"laptop"[^\n]*toolwire: connected/);
    const caller = await token(home, ['add', 'caller', 'agent']);
    expect(caller.code).toBe(0);
    const call = spawnTs([cliPath, 'call', 'laptop__sleep', '{"seconds":30}'], {
      TOOLWIRE_HOME: join(home, 'elsewhere'),
      TOOLWIRE_SERVER: `${url.replace(/^ws:/, 'http:')}/mcp`,
      TOOLWIRE_TOKEN: printedToken(caller.stdout),
    });
    await waitForText(call.stdout!, /sleeping 30 s/); // live output: the call runs on the host
    expect((await token(home, ['revoke', 'agent'])).code).toBe(0);
    const ended = await finish(call);
    expect(ended.stderr).not.toContain('lost the server');
    expect(ended.code).toBe(130);
  });

  it('token add host says when the local server listens on loopback only, and not for 0.0.0.0 or a given --server', async () => {
    const credentials = (host: string) =>
      JSON.stringify({
        server: 'ws://127.0.0.1:7700',
        mcp: 'http://127.0.0.1:7700/mcp',
        listen: { host, port: 7700 },
        host: { name: 'local', token: 'h' },
        caller: { name: 'cli', token: 'c' },
      });
    const note = /listens on \S+ only: another machine cannot reach it there/;
    for (const [listen, args, noted] of [
      ['127.0.0.1', [], true],
      ['::1', [], true],
      ['0.0.0.0', [], false],
      ['127.0.0.1', ['--server', 'wss://proxy.example:443'], false],
    ] as const) {
      const home = await tempDir();
      await writeFile(join(home, 'credentials.json'), credentials(listen), { mode: 0o600 });
      const r = await tokenHere(['add', 'host', 'laptop', ...args], { TOOLWIRE_HOME: home });
      expect(r.code).toBe(0);
      expect({ listen, args, noted: note.test(r.stdout) }).toEqual({ listen, args, noted });
    }
  });

  it('bad input: one line and a distinct exit status, nothing written', async () => {
    const home = await tempDir();
    const cases: [string[], number, RegExp][] = [
      [['add', 'admin', 'x'], 64, /unknown role "admin"/],
      [['add', 'host', 'bad name'], 64, /name must match/],
      [['add', 'host', 'a__b'], 64, /must not contain "__"/],
      [['add', 'caller', 'c', '--grant', 'a,,b'], 64, /--grant must be/],
      [['revoke', 'nobody'], 67, /no credential named "nobody"/],
      [['frobnicate'], 64, /unknown subcommand/],
    ];
    const env = { TOOLWIRE_HOME: home };
    for (const [args, code, message] of cases) {
      const r = await tokenHere(args, env);
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(r.stderr.split('\n')[0]).toMatch(message);
    }
    await expect(stat(join(home, 'tokens.json'))).rejects.toThrow();

    expect((await tokenHere(['add', 'caller', 'agent', '--grant', 'a__b,c'], env)).code).toBe(0);
    const before = await readFile(join(home, 'tokens.json'), 'utf8');
    const dup = await tokenHere(['add', 'host', 'agent'], env);
    expect(dup.code).toBe(65);
    expect(dup.stderr).toMatch(/"agent" exists already/);
    expect(await readFile(join(home, 'tokens.json'), 'utf8')).toBe(before);

    const file = join(home, 'not-a-folder');
    await writeFile(file, 'x');
    const notDir = await tokenHere(['list', '--state-dir', file], env);
    expect(notDir.code).toBe(73);
    expect(notDir.stderr).toMatch(/not a folder/);
    const serveErr = new PassThrough().setEncoding('utf8');
    let serveText = '';
    serveErr.on('data', (d: string) => (serveText += d));
    expect(await serveCommand(['--listen', '127.0.0.1:0', '--state-dir', file], { stdout: new PassThrough(), stderr: serveErr, env })).toBe(73);
    expect(serveText).toMatch(/^toolwire serve: state folder .* not a folder\n$/);

    await mkdir(join(home, 'bad'), { mode: 0o700 });
    await writeFile(join(home, 'bad', 'tokens.json'), '{ not json');
    const corrupt = await tokenHere(['list', '--state-dir', join(home, 'bad')], env);
    expect(corrupt.code).toBe(65);
    expect(corrupt.stderr).toMatch(/not JSON/);
  });
  it('a FIFO or device in the state folder is refused at once, not waited on: tokens.json 65 naming it; last-seen.json read as empty', async () => {
    const home = await tempDir();
    expect((await token(home, ['add', 'host', 'laptop'])).code).toBe(0);
    await rm(join(home, 'tokens.json'));
    await finish(spawn('mkfifo', ['-m', '600', join(home, 'tokens.json')], { stdio: ['ignore', 'pipe', 'pipe'] }));
    for (const args of [['list'], ['add', 'host', 'desk'], ['revoke', 'laptop']]) {
      const r = await token(home, args);
      expect({ args, code: r.code }).toEqual({ args, code: 65 });
      expect(r.stderr).toBe(`toolwire token: ${join(home, 'tokens.json')}: not a regular file\n`);
    }
    await rm(join(home, 'tokens.json'));
    expect((await token(home, ['add', 'host', 'laptop'])).code).toBe(0);
    await finish(spawn('mkfifo', ['-m', '600', join(home, 'last-seen.json')], { stdio: ['ignore', 'pipe', 'pipe'] }));
    const listed = await token(home, ['list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^laptop +host .* never/m);
  });

  it('a missing --state-dir: list and revoke exit 66 and make nothing; add makes it and says so on stderr', async () => {
    const home = await tempDir();
    const typo = join(home, 'typo', 'state');
    const env = { TOOLWIRE_HOME: home };
    for (const args of [['list'], ['revoke', 'laptop']]) {
      const r = await tokenHere([...args, '--state-dir', typo], env);
      expect(r.code).toBe(66);
      expect(r.stderr).toBe(`toolwire token: no state folder at ${typo} (toolwire serve or toolwire token add makes it; check --state-dir)\n`);
    }
    await expect(stat(typo)).rejects.toThrow();
    const made = await tokenHere(['add', 'host', 'laptop', '--state-dir', typo, '--server', 'ws://10.0.0.5:7700'], env);
    expect(made.code).toBe(0);
    expect(made.stderr).toBe(`toolwire token: made the state folder ${typo} (mode 0700)\n`);
    expect((await stat(typo)).mode & 0o777).toBe(0o700);
    expect(made.stdout).toContain('toolwire host --server ws://10.0.0.5:7700 --token-file ~/.toolwire/host-token');
    expect(made.stdout).not.toMatch(/this machine's name/);
  });

  it('token add host for a wss:// server does not say "use wss://" again; it names --ca for a private CA', async () => {
    const home = await tempDir();
    const env = { TOOLWIRE_HOME: home };
    const tls = await tokenHere(['add', 'host', 'laptop', '--server', 'wss://10.0.0.5:7700'], env);
    expect(tls.code).toBe(0);
    expect(tls.stdout).toContain('toolwire host --server wss://10.0.0.5:7700 --token-file ~/.toolwire/host-token');
    expect(tls.stdout).toContain("(add --ca ca.pem, a copy of the server's CA certificate, when that CA is private)");
    expect(tls.stdout).not.toContain('use wss://');
    const plain = await tokenHere(['add', 'host', 'desk', '--server', 'ws://10.0.0.5:7700'], env);
    expect(plain.stdout).toContain('(use wss:// and add --ca ca.pem when the server runs TLS with a private CA)');
  });

  it('eight token add commands at the same instant all land (the folder lock), none lost', async () => {
    const home = await tempDir();
    const names = Array.from({ length: 8 }, (_, i) => `box${i}`);
    const results = await Promise.all(names.map((n) => token(home, ['add', 'host', n, '--server', 'ws://h:7700'])));
    expect(results.map((r) => r.code)).toEqual(names.map(() => 0));
    const list = await token(home, ['list', '--json']);
    expect((JSON.parse(list.stdout) as { name: string }[]).map((r) => r.name).sort()).toEqual(names);
  });
});
