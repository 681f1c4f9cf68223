#!/usr/bin/env node
/**
 * `pnpm test:pack` — install toolwire the way a user does, outside the repository, and use it.
 *
 *   node scripts/test-pack.mjs [--node PATH] [--no-build] [--keep]
 *
 * 1. `pnpm build`, then `pnpm pack` of every package (pnpm rewrites `workspace:*` to real versions);
 * 2. `npm install` of the five tarballs into an empty folder under the OS temp directory;
 * 3. there, with plain `node` (PATH starts with the directory of `--node PATH`, default this node;
 *    no TypeScript loader, NODE_OPTIONS cleared), through the installed `toolwire` bin:
 *    `--version`; `serve --listen 127.0.0.1:0` (TOOLWIRE_HOME in the temp folder, so the credentials
 *    file is written there); `host --manifest` with a manifest of its own (`echo`, `sleep`);
 *    `tools`; `call local__echo` (exit 0, output checked); `call local__sleep --timeout 500` (exit
 *    124); and a plain `.mjs` importing `@toolwire/server` and `@toolwire/client`, which runs one
 *    call through a ToolwireServer and a ToolHost and closes both; a five-line rig of
 *    `@toolwire/testing` (a silent host: `blackhole()` → 69 by the heartbeat), and a child-process
 *    host of the kit SIGKILLed mid-call (69), nothing left running;
 * 4. stops every process it started and removes the temp folder (`--keep` leaves the folder).
 *
 * Every wait is bounded. Exit 0 when all checks pass; otherwise 1 with a line naming the failed step.
 * Plain Node.js (20.19+), no dependencies.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = ['protocol', 'server', 'client', 'cli', 'testing'];

const USAGE = 'usage: node scripts/test-pack.mjs [--node PATH] [--no-build] [--keep]\n';
let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      node: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  process.stderr.write(`test:pack: ${error.message}\n${USAGE}`);
  process.exit(64);
}

/** Thrown for a failed check; main prints its message and exits 1. */
class CheckFailed extends Error {}

const children = new Set();
let work;

function log(message) {
  process.stdout.write(`test:pack: ${message}\n`);
}

/**
 * Run a command to completion within `timeoutMs` (killed with SIGKILL after that, then a failure).
 * Resolves with `{code, signal, stdout, stderr, ms}`; output is captured unless `inherit`.
 */
function run(command, args, { cwd, env, timeoutMs, inherit = false, what = `${command} ${args.join(' ')}` }) {
  return new Promise((resolvePromise, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd, env, stdio: inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new CheckFailed(`${what}: no exit within ${timeoutMs} ms${stderr ? `; stderr:\n${stderr}` : ''}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new CheckFailed(`${what}: cannot start: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/** Start a long-running process; its output is collected in `.stdout` / `.stderr`. */
function start(command, args, { cwd, env }) {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const proc = { child, stdout: '', stderr: '', exited: once(child, 'exit').then(([code, signal]) => ({ code, signal })) };
  child.on('error', () => {}); // surfaces as the exit below / a failed wait
  child.stdout.setEncoding('utf8').on('data', (d) => (proc.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (proc.stderr += d));
  void proc.exited.then(() => children.delete(child));
  return proc;
}

/** Poll `check` (sync or async, truthy = done) every `everyMs` until `timeoutMs`; then fail with `what`. */
async function waitFor(what, timeoutMs, check, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new CheckFailed(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended. */
async function stop(proc, graceMs = 5000) {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  const ended = await proc.exited;
  clearTimeout(timer);
  return ended;
}

function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

function describe(result) {
  return `exit ${result.code ?? result.signal}${result.stdout ? `\n  stdout: ${result.stdout.trim()}` : ''}${result.stderr ? `\n  stderr: ${result.stderr.trim()}` : ''}`;
}

async function main() {
  expect(flags.node === undefined || existsSync(flags.node), `--node ${flags.node}: no such file`);
  const nodeBin = realpathSync(flags.node ?? process.execPath);
  const nodeVersion = await run(nodeBin, ['--version'], { timeoutMs: 10_000 });
  expect(nodeVersion.code === 0, `${nodeBin} --version: ${describe(nodeVersion)}`);
  log(`using ${nodeBin} (${nodeVersion.stdout.trim()})`);

  work = mkdtempSync(join(tmpdir(), 'toolwire-pack-'));
  const tarballs = join(work, 'tarballs');
  const prefix = join(work, 'install');
  const home = join(work, 'home');
  const tools = join(work, 'tools');
  for (const dir of [tarballs, prefix, home, tools]) mkdirSync(dir);

  // The repository's own environment, for pnpm and npm (they run on this machine's node).
  const repoEnv = { ...process.env };
  if (!flags['no-build']) {
    log('pnpm build');
    const built = await run('pnpm', ['build'], { cwd: repoRoot, env: repoEnv, timeoutMs: 300_000, inherit: true });
    expect(built.code === 0, `pnpm build: exit ${built.code ?? built.signal}`);
  }
  for (const name of PACKAGES) {
    const dir = join(repoRoot, 'packages', name);
    expect(existsSync(join(dir, 'dist', 'index.js')), `packages/${name}/dist/index.js is missing: run pnpm build (or drop --no-build)`);
    const packed = await run('pnpm', ['pack', '--pack-destination', tarballs], { cwd: dir, env: repoEnv, timeoutMs: 60_000 });
    expect(packed.code === 0, `pnpm pack in packages/${name}: ${describe(packed)}`);
  }
  const tgz = readdirSync(tarballs)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(tarballs, f));
  expect(tgz.length === PACKAGES.length, `expected ${PACKAGES.length} tarballs, got: ${tgz.join(', ')}`);
  log(`packed ${tgz.map((f) => f.slice(tarballs.length + 1)).join(', ')}`);

  writeFileSync(join(prefix, 'package.json'), `${JSON.stringify({ name: 'toolwire-pack-test', private: true, type: 'module' }, null, 2)}\n`);
  log(`npm install into ${prefix}`);
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tgz], { cwd: prefix, env: repoEnv, timeoutMs: 300_000 });
  expect(installed.code === 0, `npm install: ${describe(installed)}`);
  for (const forbidden of ['tsx', 'typescript', 'vitest']) {
    expect(!existsSync(join(prefix, 'node_modules', forbidden)), `npm install brought ${forbidden} into the install folder`);
  }
  const bin = join(prefix, 'node_modules', '.bin', 'toolwire');
  expect(existsSync(bin) && (statSync(bin).mode & 0o111) !== 0, `the installed toolwire bin is missing or not executable: ${bin}`);

  // Everything below runs outside the repository with plain node: `#!/usr/bin/env node` and the
  // manifest's `node` commands find `nodeBin` first on PATH.
  const env = { ...process.env, PATH: [dirname(nodeBin), process.env.PATH ?? ''].join(delimiter), TOOLWIRE_HOME: home, TOOLWIRE_LOG_LEVEL: 'warn' };
  for (const key of ['NODE_OPTIONS', 'TOOLWIRE_SERVER', 'TOOLWIRE_TOKEN', 'npm_config_node_options']) delete env[key];
  const toolwire = (args, timeoutMs = 20_000) => run(bin, args, { cwd: prefix, env, timeoutMs, what: `toolwire ${args.join(' ')}` });

  const which = await run('node', ['-p', 'process.execPath'], { cwd: prefix, env, timeoutMs: 10_000 });
  expect(realpathSync(which.stdout.trim()) === nodeBin, `node on PATH is ${which.stdout.trim()}, expected ${nodeBin}`);

  const version = await toolwire(['--version']);
  expect(version.code === 0 && /^toolwire \d+\.\d+\.\d+/.test(version.stdout), `toolwire --version: ${describe(version)}`);
  log(`toolwire --version: ${version.stdout.trim()} (${version.ms} ms)`);

  const serve = start(bin, ['serve', '--listen', '127.0.0.1:0'], { cwd: prefix, env });
  const banner = await Promise.race([
    waitFor('toolwire serve banner with "credentials written to"', 20_000, () => /credentials written to/.test(serve.stdout) && serve.stdout),
    serve.exited.then((e) => {
      throw new CheckFailed(`toolwire serve exited early (${e.code ?? e.signal}); stderr:\n${serve.stderr}`);
    }),
  ]);
  const listening = /toolwire server listening on (\S+):(\d+)/.exec(banner);
  expect(listening !== null && Number(listening[2]) > 0, `toolwire serve banner has no port:\n${banner}`);
  expect(existsSync(join(home, 'credentials.json')), `toolwire serve did not write ${join(home, 'credentials.json')}`);
  log(`toolwire serve listening on ${listening[1]}:${listening[2]}`);

  writeFileSync(
    join(tools, 'echo.mjs'),
    "let s = ''; process.stdin.setEncoding('utf8').on('data', (d) => (s += d)).on('end', () => process.stdout.write(`${JSON.parse(s).text}\\n`));\n",
  );
  writeFileSync(
    join(tools, 'sleep.mjs'),
    "let s = ''; process.stdin.setEncoding('utf8').on('data', (d) => (s += d)).on('end', () => setTimeout(() => {}, JSON.parse(s).seconds * 1000));\n",
  );
  const manifest = {
    schema: 1,
    tools: {
      echo: {
        description: 'Print the input text',
        input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
        command: ['node', '${TOOLWIRE_MANIFEST_DIR}/echo.mjs'],
      },
      sleep: {
        description: 'Sleep for some seconds',
        input_schema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'], additionalProperties: false },
        command: ['node', '${TOOLWIRE_MANIFEST_DIR}/sleep.mjs'],
      },
    },
  };
  writeFileSync(join(tools, 'tools.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const host = start(bin, ['host', '--manifest', join(tools, 'tools.json'), '--root', tools], { cwd: prefix, env });

  let listed;
  await waitFor(
    'toolwire tools listing local__echo and local__sleep',
    20_000,
    async () => {
      if (host.child.exitCode !== null || host.child.signalCode !== null) {
        throw new CheckFailed(`toolwire host exited early (${host.child.exitCode ?? host.child.signalCode}); stderr:\n${host.stderr}`);
      }
      listed = await toolwire(['tools']);
      return listed.code === 0 && listed.stdout.includes('local__echo') && listed.stdout.includes('local__sleep');
    },
    200,
  );
  log(`toolwire tools: exit 0, lists ${listed.stdout.trim().split('\n').length} tools (${listed.ms} ms)`);

  const text = 'hello from the pack test';
  const echo = await toolwire(['call', 'local__echo', JSON.stringify({ text })]);
  expect(echo.code === 0 && echo.stdout === `${text}\n`, `toolwire call local__echo: ${describe(echo)}`);
  log(`toolwire call local__echo: exit 0, output checked (${echo.ms} ms)`);

  const sleep = await toolwire(['call', 'local__sleep', '{"seconds":30}', '--timeout', '500']);
  expect(sleep.code === 124 && /toolwire:/.test(sleep.stderr), `toolwire call local__sleep --timeout 500: expected exit 124, got ${describe(sleep)}`);
  expect(sleep.ms < 10_000, `toolwire call local__sleep --timeout 500 took ${sleep.ms} ms`);
  log(`toolwire call local__sleep --timeout 500: exit 124 (${sleep.ms} ms)`);

  const hostEnd = await stop(host);
  expect(hostEnd.code === 0, `toolwire host did not exit 0 on SIGTERM (${hostEnd.code ?? hostEnd.signal}); stderr:\n${host.stderr}`);
  const serveEnd = await stop(serve);
  expect(serveEnd.code === 0, `toolwire serve did not exit 0 on SIGTERM (${serveEnd.code ?? serveEnd.signal}); stderr:\n${serve.stderr}`);
  log('toolwire host and serve stopped, exit 0');

  // The libraries, from a plain .mjs file next to the installed node_modules.
  const script = join(prefix, 'use-libraries.mjs');
  writeFileSync(
    script,
    `
const { ToolwireServer } = await import('@toolwire/server');
const { ToolHost } = await import('@toolwire/client');
const hostToken = 'h'.repeat(32);
const server = new ToolwireServer({ hosts: [{ name: 'lib', token: hostToken }], callers: [{ name: 'agent', token: 'c'.repeat(32) }] });
const { url } = await server.listen(0, '127.0.0.1');
const host = new ToolHost({ server: url, token: hostToken, reconnect: false });
host.tool('add', { description: 'a + b', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } }, async (input) => String(input.a + input.b));
try {
  await host.start();
  const result = await server.executor.execute({ name: 'lib__add', input: { a: 2, b: 3 }, agent: 'agent' });
  if (result.outcome !== 'completed' || result.envelope.text !== 'Exit code: 0\\n5') throw new Error('unexpected result ' + JSON.stringify(result));
  console.log('libraries ok');
} finally {
  await host.close();
  await server.close();
}
`,
  );
  const lib = await run('node', [script], { cwd: prefix, env, timeoutMs: 30_000, what: 'node use-libraries.mjs' });
  expect(lib.code === 0 && lib.stdout.trim() === 'libraries ok', `node use-libraries.mjs: ${describe(lib)}`);
  log(`import('@toolwire/server'), import('@toolwire/client'): one call through ToolwireServer and ToolHost, closed (${lib.ms} ms)`);

  // @toolwire/testing: the five-line rig of its README, then a child-process host (dist/host-child.js) killed mid-call.
  const rig = join(prefix, 'rig.mjs');
  writeFileSync(
    rig,
    `import { closeAll, expectCapture, startHost, startServer } from '@toolwire/testing';
const server = await startServer({ heartbeatMs: 200 });
const host = await startHost(server, { echo: (input) => JSON.stringify(input) }, { name: 'rig' });
host.net.blackhole();
expectCapture(await server.call('rig__echo', { hi: 1 })).toExit(69).withReason(/heartbeat/);
await closeAll();
console.log('rig ok');
`,
  );
  const rigRun = await run('node', [rig], { cwd: prefix, env, timeoutMs: 30_000, what: 'node rig.mjs' });
  expect(rigRun.code === 0 && rigRun.stdout.trim() === 'rig ok', `node rig.mjs (@toolwire/testing): ${describe(rigRun)}`);
  log(`@toolwire/testing five-line rig: blackhole() → 69 by the heartbeat, closed (${rigRun.ms} ms)`);

  const child = join(prefix, 'rig-process.mjs');
  writeFileSync(
    child,
    `import { closeAll, expectCapture, openHandles, startHost, startServer, waitForCallInFlight } from '@toolwire/testing';
const server = await startServer();
const host = await startHost(server, ${JSON.stringify(join(tools, 'tools.json'))}, { name: 'child', process: true });
const call = server.call('child__sleep', { seconds: 30 });
await waitForCallInFlight(server);
await host.kill('SIGKILL');
expectCapture(await call).toExit(69);
await closeAll();
let alive = true;
try { process.kill(host.pid, 0); } catch { alive = false; }
if (alive || openHandles().handles !== 0) throw new Error('left behind: ' + JSON.stringify({ alive, ...openHandles() }));
console.log('process rig ok');
`,
  );
  const childRun = await run('node', [child], { cwd: prefix, env, timeoutMs: 60_000, what: 'node rig-process.mjs' });
  expect(childRun.code === 0 && childRun.stdout.trim() === 'process rig ok', `node rig-process.mjs (@toolwire/testing): ${describe(childRun)}`);
  log(`@toolwire/testing child-process host SIGKILLed mid-call → 69, nothing left (${childRun.ms} ms)`);
  return nodeVersion.stdout.trim();
}

async function cleanup() {
  const alive = [...children].filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(alive.map((child) => stop({ child, exited: once(child, 'exit') }, 2000)));
  if (work !== undefined) {
    if (flags.keep) log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

let failed = false;
const interrupted = new Promise((resolvePromise) => {
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => resolvePromise(new CheckFailed(`interrupted by ${signal}`)));
});
try {
  const outcome = await Promise.race([main(), interrupted]);
  if (outcome instanceof Error) throw outcome;
  log(`PASSED on node ${outcome}`);
} catch (error) {
  failed = true;
  process.stderr.write(`test:pack: FAILED: ${error instanceof CheckFailed ? error.message : (error?.stack ?? String(error))}\n`);
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
