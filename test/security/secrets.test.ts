/**
 * Issue 10 §3 — tokens stay out of sight: `toolwire host --token-file` / `$TOOLWIRE_TOKEN_FILE`
 * (a file open to group or others is refused 77, a missing one 66), and a tool that prints its whole
 * environment, run by a real `toolwire host` process, never shows the host's credentials — nor does
 * the server's disk record of the call. `--env passthrough` and `env_passthrough` limit what tools get.
 */
import { spawn } from 'node:child_process';
import { chmod, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CALLER_TOKEN, HOST_TOKEN, type Started, cleanup, cliPath, finish, spawnTs, startServer, tempDir, waitFor } from '../helpers.js';

afterEach(cleanup);

const manifest = {
  schema: 1,
  tools: {
    print_env: {
      description: 'prints its environment',
      input_schema: { type: 'object' },
      command: ['env'],
      env_passthrough: ['PASSED_VAR'],
      env: { OWN_VAR: 'own' },
    },
  },
};

/** A folder with the manifest and a 0600 token file holding HOST_TOKEN (with a trailing newline). */
async function setup(): Promise<{ dir: string; manifestPath: string; tokenFile: string }> {
  const dir = await tempDir('toolwire-secrets-');
  const manifestPath = join(dir, 'tools.json');
  const tokenFile = join(dir, 'host-token');
  await writeFile(manifestPath, JSON.stringify(manifest));
  await writeFile(tokenFile, `${HOST_TOKEN}\n`, { mode: 0o600 });
  await chmod(tokenFile, 0o600); // whatever the umask
  return { dir, manifestPath, tokenFile };
}

/** Start `toolwire host` with `args` and `env`, wait for its tool; returns its stderr so far. */
async function startHost(started: Started, args: string[], env: NodeJS.ProcessEnv): Promise<() => string> {
  const child = spawnTs([cliPath, 'host', '--server', started.url, ...args], env);
  let log = '';
  child.stderr!.on('data', (d: string) => (log += d));
  await waitFor(() => started.server.router.tools().some((t) => t.name === 'alpha__print_env') || child.exitCode !== null, 'the host to advertise', 15_000);
  if (child.exitCode !== null) throw new Error(`toolwire host exited ${child.exitCode}: ${log}`);
  return () => log;
}

/** `toolwire call alpha__print_env` → the variables the tool saw. */
async function callPrintEnv(started: Started): Promise<{ text: string; vars: Record<string, string> }> {
  const call = await finish(spawnTs([cliPath, 'call', 'alpha__print_env', '{}'], { TOOLWIRE_SERVER: started.url, TOOLWIRE_TOKEN: CALLER_TOKEN }));
  expect(call.stderr).toBe('');
  expect(call.code).toBe(0);
  const vars: Record<string, string> = {};
  for (const line of call.stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) vars[line.slice(0, at)] = line.slice(at + 1);
  }
  return { text: call.stdout, vars };
}

const hostEnv = (over: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ KEPT_VAR: 'kept', PASSED_VAR: 'passed', MY_TOKEN: HOST_TOKEN, TOOLWIRE_TOKEN: '', ...over });

describe('a tool run by toolwire host never sees the host credentials', () => {
  it('$TOOLWIRE_TOKEN_FILE: the tool environment, the disk record and the host log hold no token', async () => {
    const { manifestPath, tokenFile } = await setup();
    const recordDir = await tempDir('toolwire-record-');
    const started = await startServer({ recordDir });
    const log = await startHost(started, ['--manifest', manifestPath, '--log-level', 'debug'], hostEnv({ TOOLWIRE_TOKEN_FILE: tokenFile }));
    const { text, vars } = await callPrintEnv(started);
    expect(vars.KEPT_VAR).toBe('kept'); // default: inherit the rest
    expect(vars.OWN_VAR).toBe('own');
    expect(vars.TOOLWIRE_CALL_ID).toBeTruthy();
    expect(vars).not.toHaveProperty('TOOLWIRE_TOKEN');
    expect(vars).not.toHaveProperty('TOOLWIRE_TOKEN_FILE');
    expect(vars).not.toHaveProperty('MY_TOKEN'); // its value is the token
    expect(text).not.toContain(HOST_TOKEN);
    expect(text).not.toContain(tokenFile);

    const agents = await readdir(recordDir);
    expect(agents).toEqual(['agent']);
    const ids = await readdir(join(recordDir, 'agent'));
    expect(ids).toHaveLength(1);
    const output = await readFile(join(recordDir, 'agent', ids[0]!, 'output.json'), 'utf8');
    expect(JSON.parse(output)).toMatchObject({ exitCode: 0 });
    expect(output).toContain('KEPT_VAR=kept');
    expect(output).not.toContain(HOST_TOKEN);
    expect(output).not.toContain('TOOLWIRE_TOKEN');
    expect(log()).not.toContain(HOST_TOKEN);
  });

  it('--token-file with --env passthrough: only the base variables, env_passthrough and the tool env', async () => {
    const { manifestPath, tokenFile } = await setup();
    const started = await startServer();
    await startHost(started, ['--manifest', manifestPath, '--token-file', tokenFile, '--env', 'passthrough'], hostEnv({ TOOLWIRE_TOKEN_FILE: '/elsewhere' }));
    const { text, vars } = await callPrintEnv(started);
    expect(vars.PATH).toBe(process.env.PATH);
    expect(vars.PASSED_VAR).toBe('passed');
    expect(vars.OWN_VAR).toBe('own');
    expect(vars).not.toHaveProperty('KEPT_VAR');
    expect(vars).not.toHaveProperty('TOOLWIRE_TOKEN_FILE');
    expect(text).not.toContain(HOST_TOKEN);
    const allowed = ['PATH', 'HOME', 'LANG', 'TERM', 'USER', 'SHELL', 'TMPDIR', 'PASSED_VAR', 'OWN_VAR'];
    const facts = ['TOOLWIRE_CALL_ID', 'TOOLWIRE_AGENT', 'TOOLWIRE_WORKSPACE', 'TOOLWIRE_DEADLINE_MS'];
    expect(Object.keys(vars).filter((k) => !allowed.includes(k) && !facts.includes(k))).toEqual([]);
  });

  it('--token wins over --token-file (the file is then not read)', async () => {
    const { dir, manifestPath } = await setup();
    const started = await startServer();
    await startHost(started, ['--manifest', manifestPath, '--token', HOST_TOKEN, '--token-file', join(dir, 'missing')], hostEnv({}));
    const { text } = await callPrintEnv(started);
    expect(text).not.toContain(HOST_TOKEN);
  });
});

describe('toolwire host refuses a token file it must not use', () => {
  it('a file readable by group or others: exit 77, one line naming the file, its mode and chmod 600', async () => {
    const { manifestPath, tokenFile } = await setup();
    await chmod(tokenFile, 0o644);
    const r = await finish(spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath, '--token-file', tokenFile], hostEnv({})));
    expect(r.code).toBe(77);
    expect(r.stderr).toBe(`toolwire host: token file --token-file ${tokenFile} has mode 0644: group or others may read or write it; run: chmod 600 ${tokenFile}\n`);
    expect(r.stderr).not.toContain(HOST_TOKEN);
  });

  it('a missing $TOOLWIRE_TOKEN_FILE: exit 66, one line', async () => {
    const { dir, manifestPath } = await setup();
    const missing = join(dir, 'nope');
    const r = await finish(spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath], hostEnv({ TOOLWIRE_TOKEN_FILE: missing })));
    expect(r.code).toBe(66);
    expect(r.stderr).toBe(`toolwire host: cannot read token file $TOOLWIRE_TOKEN_FILE ${missing}: no such file\n`);
  });

  it('a token file whose token holds a line break or control character: exit 66, one line, no crash and no part of it shown', async () => {
    const { manifestPath, tokenFile } = await setup();
    for (const text of ['first-part\nsecond-part\n', 'first-part\u0000second-part', 'first-part second-part\n']) {
      await writeFile(tokenFile, text, { mode: 0o600 });
      const r = await finish(spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath, '--token-file', tokenFile], hostEnv({})));
      expect(r.code).toBe(66);
      expect(r.stderr).toBe(
        `toolwire host: token file --token-file ${tokenFile} holds whitespace or a control character inside its token (a token is one line of visible characters)\n`,
      );
      expect(r.stderr).not.toMatch(/first-part|second-part/);
    }
  });

  it('a token file that is a FIFO is refused 66 at once, without waiting for a writer', async () => {
    const { dir, manifestPath } = await setup();
    const fifo = join(dir, 'fifo-token');
    await finish(spawn('mkfifo', ['-m', '600', fifo], { stdio: ['ignore', 'pipe', 'pipe'] }));
    const r = await finish(spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath, '--token-file', fifo], hostEnv({})));
    expect(r.code).toBe(66);
    expect(r.stderr).toBe(`toolwire host: token file --token-file ${fifo} is not a regular file\n`);
  });

  it('a --token that cannot travel in an HTTP header is a usage error (64) with one line, not a crash', async () => {
    const { manifestPath } = await setup();
    const r = await finish(
      spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath, '--token', 'first-part\nsecond-part'], hostEnv({})),
    );
    expect(r.code).toBe(64);
    expect(r.stderr.split('\n')[0]).toBe('toolwire host: the host token must not hold whitespace or control characters (it travels as "Bearer <token>")');
    expect(r.stderr).not.toMatch(/first-part|second-part|at /);
  });

  it('a bad --env value is a usage error (64); a manifest tool with an unknown key is still refused (65)', async () => {
    const { dir, manifestPath, tokenFile } = await setup();
    const bad = await finish(
      spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', manifestPath, '--token-file', tokenFile, '--env', 'none'], hostEnv({})),
    );
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain('--env must be inherit or passthrough');
    const typo = join(dir, 'typo.json');
    await writeFile(typo, JSON.stringify({ schema: 1, tools: { t: { input_schema: { type: 'object' }, command: ['env'], env_passthru: ['X'] } } }));
    const r = await finish(spawnTs([cliPath, 'host', '--server', 'ws://127.0.0.1:9', '--manifest', typo, '--token-file', tokenFile], hostEnv({})));
    expect(r.code).toBe(65);
    expect(r.stderr).toMatch(/tools\.t\.env_passthru is not a known key/);
  });
});
