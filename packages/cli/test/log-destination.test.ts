/**
 * The JSON log destination of `toolwire serve` and `toolwire host` on stderr (issue 16): lines are
 * held for at most 10 ms and written together, and nothing held is lost when the
 * process exits — by `process.exit()` in the same turn, or through the commands' SIGTERM handling.
 * Each test waits for `close`, not `exit`: at `exit` the last lines may still be unread in the pipe.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';
import { HeldDestination } from '../src/log-format.js';

const here = dirname(fileURLToPath(import.meta.url));
const main = join(here, '..', 'src', 'main.ts');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Start `node args…` with stderr collected; killed (SIGKILL) at cleanup if still running. */
function start(args: string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; stderr: () => string } {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return { child, stderr: () => text };
}

/** The JSON lines of `text`. */
const jsonLines = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('HeldDestination (JSON logs on stderr)', () => {
  it('writes every line logged in the turn process.exit() is called in', async () => {
    const { child, stderr } = start([join(here, 'fixtures', 'log-burst.ts')], { ...process.env, LOG_BURST_LINES: '5000' });
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
    const lines = jsonLines(stderr());
    expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it('writes held lines byte for byte in order: non-ASCII text, lines past the hold size and one longer than the reused buffer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolwire-logdest-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'log');
    const fd = openSync(file, 'w');
    cleanups.push(() => closeSync(fd));
    const destination = new HeldDestination(fd);
    const lines = Array.from({ length: 300 }, (_, i) => `{"i":${i},"text":"grüße ✓ 🚀 ${'x'.repeat(i * 7)}"}\n`);
    lines.splice(150, 0, `{"big":"${'é'.repeat(40_000)}"}\n`);
    for (const line of lines) destination.write(line);
    destination.flushSync();
    expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
  });

  it('toolwire host writes its last line ("stopping") before it exits on SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolwire-logdest-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const manifest = join(dir, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { t: { description: 't', input_schema: { type: 'object' }, command: ['true'] } } }));
    // No server listens on port 1: the host keeps retrying (and logging) until it is stopped.
    const { child, stderr } = start([main, 'host', '--manifest', manifest, '--server', 'ws://127.0.0.1:1', '--log-format', 'json', '--log-level', 'info'], {
      ...process.env,
      TOOLWIRE_TOKEN: 'logdest-host-token-aaaaaaaaaaaaaaaaaaa',
    });
    const deadline = Date.now() + 15_000;
    while (!stderr().includes('ECONNREFUSED')) {
      if (Date.now() > deadline) throw new Error(`the host logged no connection attempt: ${stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGTERM');
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
    const lines = jsonLines(stderr());
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: 'toolwire: stopping', signal: 'SIGTERM' });
  });
});

describe('pino-pretty is loaded on demand', () => {
  /** Whether a fresh node process that made the `format` log destination loaded pino-pretty. */
  async function prettyLoaded(format: 'json' | 'pretty'): Promise<boolean> {
    const { stdout } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, join(here, 'fixtures', 'pretty-loaded.mjs'), format], { timeout: 30_000 });
    return JSON.parse(stdout.trim()) as boolean;
  }

  it('JSON logs (the default off a terminal) do not load pino-pretty; pretty logs do', async () => {
    expect(await prettyLoaded('json')).toBe(false);
    expect(await prettyLoaded('pretty')).toBe(true);
  });
});
