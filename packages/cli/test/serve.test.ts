import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseListen } from '../src/commands/serve-config.js';
import { serveCommand } from '../src/commands/serve.js';

let home: string;
let stops: AbortController[];
let running: Promise<number>[];

interface Run {
  out: PassThrough;
  err: PassThrough;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number>;
  stop: AbortController;
}

function serve(argv: string[]): Run {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  err.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const stop = new AbortController();
  stops.push(stop);
  const exit = serveCommand(argv, { stdout: out, stderr: err, env: { TOOLWIRE_HOME: home }, signal: stop.signal });
  running.push(exit);
  return { out, err, stdout: () => stdout, stderr: () => stderr, exit, stop };
}

/** Resolve with stdout once the banner (one write) has arrived, or reject when the command exits first. */
async function banner(run: Run): Promise<string> {
  const seen = new Promise<string>((resolve) => {
    const check = (): void => {
      if (run.stdout().includes('listening')) resolve(run.stdout());
    };
    run.out.on('data', check);
    check();
  });
  return Promise.race([seen, run.exit.then((code) => Promise.reject(new Error(`exited ${code}: ${run.stderr()}`)))]);
}

async function configFile(value: unknown): Promise<string> {
  const path = join(home, 'config.json');
  await writeFile(path, JSON.stringify(value));
  return path;
}

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolwire-cli-'));
  stops = [];
  running = [];
});

afterEach(async () => {
  for (const stop of stops) stop.abort();
  await Promise.allSettled(running);
  await rm(home, { recursive: true, force: true });
});

describe('toolwire serve: usage', () => {
  it('prints the usage and exits 0 for --help', async () => {
    const run = serve(['--help']);
    expect(await run.exit).toBe(0);
    expect(run.stdout()).toContain('usage: toolwire serve');
  });

  it.each([
    ['an unknown flag', ['--bogus']],
    ['a positional argument', ['extra']],
    ['a bad --listen', ['--listen', 'localhost']],
    ['a port over 65535', ['--listen', '127.0.0.1:70000']],
    ['a bad --log-level', ['--log-level', 'loud']],
    ['a missing config file', ['--config', '/nonexistent/toolwire.json']],
  ])('exits 64 for %s', async (_label, argv) => {
    const run = serve(argv);
    expect(await run.exit).toBe(64);
    expect(run.stderr()).toContain('toolwire serve:');
  });

  it('exits 64 naming an unknown config key', async () => {
    const path = await configFile({ hosts: [{ name: 'h', token: 't', tokn: 'x' }], callers: [], heartbeat: 5 });
    const run = serve(['--config', path]);
    expect(await run.exit).toBe(64);
    expect(run.stderr()).toContain('/hosts/0: unknown key "tokn"');
    expect(run.stderr()).toContain('/: unknown key "heartbeat"');
  });

  it('exits 64 for a credential the token table refuses', async () => {
    const path = await configFile({ hosts: [], callers: [{ name: 'has space', token: 't' }] });
    const run = serve(['--config', path, '--log-level', 'silent']);
    expect(await run.exit).toBe(64);
    expect(run.stderr()).toContain('callers[0].name');
  });

  it('exits 69 when the address is in use', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = serve(['--listen', `127.0.0.1:${port}`, '--log-level', 'silent']);
      expect(await run.exit).toBe(69);
      expect(run.stderr()).toContain('EADDRINUSE');
    } finally {
      blocker.close();
    }
  });

  it('exits 73 naming the folder when disk records cannot be written under recordDir, before its port opens', async () => {
    await writeFile(join(home, 'a-file'), 'not a folder');
    const path = await configFile({ hosts: [], callers: [], recordDir: 'a-file/records' });
    const run = serve(['--config', path, '--listen', '127.0.0.1:0', '--log-level', 'silent']);
    expect(await run.exit).toBe(73);
    expect(run.stderr()).toBe(`toolwire serve: disk records cannot be written under ${join(home, 'a-file', 'records')} (recordDir): ENOTDIR\n`);
    expect(run.stdout()).toBe('');
  });

  it('creates a missing recordDir (mode 0700) and leaves no probe file in it', async () => {
    const path = await configFile({ hosts: [], callers: [], recordDir: 'deep/records' });
    const run = serve(['--config', path, '--listen', '127.0.0.1:0', '--log-level', 'silent']);
    await banner(run);
    const dir = join(home, 'deep', 'records');
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual([]);
    run.stop.abort();
    expect(await run.exit).toBe(0);
  });
});

describe('toolwire serve: running', () => {
  it('runs the embedded default, writes the credentials file and stops cleanly with 0', async () => {
    const run = serve(['--listen', '127.0.0.1:0', '--log-level', 'silent']);
    const text = await banner(run);
    const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(text)![1]);
    const hostToken = /host token .*: (\S+)/.exec(text)![1]!;
    const callerToken = /caller token .*: (\S+)/.exec(text)![1]!;
    expect(hostToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(text).toContain(`ws://127.0.0.1:${port}`);
    expect(text).toContain(`http://127.0.0.1:${port}/mcp`);
    const path = join(home, 'credentials.json');
    expect(text).toContain(`credentials written to ${path}`);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      server: `ws://127.0.0.1:${port}`,
      mcp: `http://127.0.0.1:${port}/mcp`,
      listen: { host: '127.0.0.1', port },
      host: { name: 'local', token: hostToken },
      caller: { name: 'cli', token: callerToken },
    });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(await health.json()).toEqual({ ok: true, hosts: 0, tools: 0 });
    run.stop.abort();
    expect(await run.exit).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it('does not write the credentials file with a config unless asked', async () => {
    const path = await configFile({ listen: '127.0.0.1:0', hosts: [{ name: 'h1', token: 'host-tok' }], callers: [{ name: 'c1', token: 'caller-tok' }] });
    const run = serve(['--config', path, '--log-level', 'silent']);
    const text = await banner(run);
    expect(text).not.toContain('token');
    await expect(stat(join(home, 'credentials.json'))).rejects.toThrow();
    run.stop.abort();
    expect(await run.exit).toBe(0);
  });

  it('writes the credentials file for the first host and caller when the config says writeCredentials', async () => {
    const path = await configFile({
      hosts: [{ name: 'h1', token: 'host-tok' }],
      callers: [{ name: 'c1', token: 'caller-tok', grant: ['h1__x'] }],
      writeCredentials: true,
    });
    const run = serve(['--config', path, '--listen', '127.0.0.1:0', '--log-level', 'silent']);
    await banner(run);
    const creds = JSON.parse(await readFile(join(home, 'credentials.json'), 'utf8'));
    expect(creds).toMatchObject({ host: { name: 'h1', token: 'host-tok' }, caller: { name: 'c1', token: 'caller-tok' } });
    run.stop.abort();
    expect(await run.exit).toBe(0);
  });
});

describe('config file', () => {
  it('resolves recordDir against the config file directory and passes limits through', async () => {
    const path = await configFile({ hosts: [], callers: [], recordDir: 'records', heartbeatMs: 500, naming: 'bare' });
    const config = await loadConfig(path);
    expect(config.options).toEqual({ recordDir: join(home, 'records'), heartbeatMs: 500, naming: 'bare' });
    expect(config.writeCredentials).toBe(false);
  });

  it('rejects JSON that is not a config with a ConfigError', async () => {
    await writeFile(join(home, 'bad.json'), '{ nope');
    await expect(loadConfig(join(home, 'bad.json'))).rejects.toThrow(ConfigError);
    await expect(loadConfig(await configFile({ hosts: [] }))).rejects.toThrow(/must have required property 'callers'/);
    await expect(loadConfig(await configFile({ hosts: [], callers: [], heartbeatMs: 0 }))).rejects.toThrow(/heartbeatMs must be >= 1/);
  });

  it('parses HOST:PORT and [v6]:PORT', () => {
    expect(parseListen('127.0.0.1:7700')).toEqual({ host: '127.0.0.1', port: 7700 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(() => parseListen('::1:7700')).toThrow(ConfigError);
    expect(() => parseListen('host:')).toThrow(ConfigError);
  });
});
