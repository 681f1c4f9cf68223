/**
 * Issue 5 §8 (and §5 on the host side) — manifest safety: commands run without a shell, `${VAR}`
 * expansion cannot inject arguments, the host runs only tools it registered whatever name the
 * server sends, and `__proto__`-style keys in call frames stay data.
 */
import { access, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ResultMessage, fromWire } from '@toolwire/protocol';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ToolHost, loadManifest } from '../src/index.js';
import { runCommandTool } from '../src/subprocess/run-command.js';
import { FakeServer } from './helpers/fake-server.js';

const silent = pino({ level: 'silent' });
const object = { type: 'object' } as const;
const stdout = (r: ResultMessage): string => Buffer.from(fromWire(r.stdout, r.stdoutEncoding)).toString('utf8');
const stderr = (r: ResultMessage): string => Buffer.from(fromWire(r.stderr, r.stderrEncoding)).toString('utf8');

let dir: string;
const closers: (() => Promise<void>)[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-sec-host-'));
});
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
  await rm(dir, { recursive: true, force: true });
});

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

function ctx() {
  return { id: 'c1', agent: 'agent', workspace: '', deadlineMs: 10_000, signal: new AbortController().signal };
}

/** A connected ToolHost against a fake server; resolves with both and the connection. */
async function connected(register: (host: ToolHost) => void) {
  const server = await FakeServer.start();
  closers.push(() => server.close());
  const host = new ToolHost({ server: server.url, token: 'tok', logger: silent, reconnect: false });
  closers.push(() => host.close());
  register(host);
  const conn = server.nextConnection();
  await host.start();
  return { server, host, conn: await conn };
}

describe('manifest commands run without a shell', () => {
  it('passes shell metacharacters and expanded values to the program as literal, single arguments', async () => {
    await writeFile(join(dir, 'argv.mjs'), 'process.stdout.write(JSON.stringify(process.argv.slice(2)))');
    const evil = 'a b --flag "q" \'s\' ${HOME} $(touch pwned-env) `touch pwned-tick`\nsecond line';
    const manifest = {
      schema: 1,
      tools: {
        argv: {
          input_schema: object,
          command: [
            'node',
            '${TOOLWIRE_MANIFEST_DIR}/argv.mjs',
            '; touch pwned1',
            '$(touch pwned2)',
            '`touch pwned3`',
            '| tee pwned4',
            '&& touch pwned5',
            '> pwned6',
            '*',
            '${EVIL}',
            '--opt=${EVIL}',
            '${UNSET_VAR:-x y z}',
            '${EMPTY:-}',
          ],
          cwd: '.',
        },
      },
    };
    await writeFile(join(dir, 'tools.json'), JSON.stringify(manifest));
    const [tool] = await loadManifest(join(dir, 'tools.json'), { EVIL: evil, EMPTY: '' });
    const capture = await runCommandTool(tool!, {}, ctx(), { root: dir });
    expect(capture.exitCode).toBe(0);
    expect(JSON.parse(Buffer.from(capture.stdout).toString('utf8'))).toEqual([
      '; touch pwned1',
      '$(touch pwned2)',
      '`touch pwned3`',
      '| tee pwned4',
      '&& touch pwned5',
      '> pwned6',
      '*',
      evil,
      `--opt=${evil}`,
      'x y z',
      '',
    ]);
    // Nothing was interpreted: no file was created, the value's own ${HOME} was not expanded again.
    expect((await readdir(dir)).sort()).toEqual(['argv.mjs', 'tools.json']);
  });

  it('cannot be tricked into a shell by a value that names one', async () => {
    const [tool] = await loadManifest(await manifestWith(['${PROG}', '-c', 'touch pwned']), { PROG: 'sh -c' });
    const capture = await runCommandTool(tool!, {}, ctx(), { root: dir });
    expect(capture.exitCode).toBe(127); // "sh -c" is one program name, and there is none by that name
    expect(await exists(join(dir, 'pwned'))).toBe(false);
  });

  async function manifestWith(command: string[]): Promise<string> {
    const file = join(dir, 'tools.json');
    await writeFile(file, JSON.stringify({ schema: 1, tools: { t: { input_schema: object, command, cwd: '.' } } }));
    return file;
  }
});

describe('the host runs only its own tools', () => {
  it('answers 127 for any name it did not register, whatever the server sends, and runs nothing', async () => {
    const marker = join(dir, 'ran');
    const { conn } = await connected((host) => {
      host.command('run', { inputSchema: object, command: ['node', '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`] });
      host.tool('echo', { inputSchema: object }, () => 'echo');
    });
    const names = [
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'valueOf',
      'prototype',
      'node',
      'sh',
      '/bin/sh',
      '../run',
      './run',
      'run ',
      ' run',
      'RUN',
      'Run',
      'test-host__run',
      'run\u0000',
      'sh -c id',
      'echo;run',
    ];
    const results = new Map<string, ResultMessage>();
    for (const [i, tool] of names.entries()) {
      conn.send({ type: 'call', id: `c${i}`, tool, input: {}, workspace: '', agent: 'agent', deadlineMs: 10_000 });
      const result = await conn.next('result');
      results.set(tool, result);
    }
    for (const [tool, result] of results) {
      expect(result.exitCode, tool).toBe(127);
      expect(stderr(result)).toBe(`toolwire: no such tool ${JSON.stringify(tool)} on this host\n`);
    }
    expect(await exists(marker)).toBe(false);
    // The marker mechanism works: the registered name does run.
    conn.send({ type: 'call', id: 'ok', tool: 'run', input: {}, workspace: '', agent: 'agent', deadlineMs: 10_000 });
    expect((await conn.next('result')).exitCode).toBe(0);
    expect(await exists(marker)).toBe(true);
  });
});

describe('call inputs are data on the host', () => {
  it('__proto__ / constructor / prototype keys in a call frame reach the handler and the subprocess as own keys and pollute nothing', async () => {
    const seen: unknown[] = [];
    await writeFile(join(dir, 'stdin.mjs'), 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(s))');
    const { conn } = await connected((host) => {
      host.tool('echo', { inputSchema: object }, (input) => {
        seen.push(input);
        return JSON.stringify(Object.keys(input as object));
      });
      host.command('stdin', { inputSchema: object, command: ['node', join(dir, 'stdin.mjs')] });
    });
    const input = '{"__proto__":{"polluted":"host"},"constructor":{"prototype":{"polluted":"host"}},"prototype":{"polluted":"host"}}';
    conn.ws.send(`{"type":"call","id":"a","tool":"echo","input":${input},"workspace":"","agent":"agent","deadlineMs":10000}`);
    expect(stdout(await conn.next('result'))).toBe('["__proto__","constructor","prototype"]');
    expect(Object.getPrototypeOf(seen[0])).toBe(Object.prototype);
    conn.ws.send(`{"type":"call","id":"b","tool":"stdin","input":${input},"workspace":"","agent":"agent","deadlineMs":10000}`);
    expect(stdout(await conn.next('result'))).toBe(input);
    // A frame carrying such keys at its top level is refused by shape and changes nothing.
    conn.ws.send('{"type":"cancel","id":"zz","reason":"stop","__proto__":{"polluted":"frame"}}');
    conn.ws.send('{"__proto__":{"polluted":"frame"}}');
    conn.ws.send('{"type":"call","id":"c","tool":"echo","input":{},"workspace":"","agent":"agent","deadlineMs":10000}');
    expect(stdout(await conn.next('result'))).toBe('[]');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  });
});
