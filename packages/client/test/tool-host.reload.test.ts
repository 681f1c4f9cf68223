/**
 * ToolHost changes its tool set while connected (`replaceCommands`, `remove`): one `advertise`
 * per change, calls in flight keep the definition they started with.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type CommandToolSpec, ToolHost } from '../src/index.js';
import { FakeServer } from './helpers/fake-server.js';
import { poll } from './helpers/process.js';

const object = { type: 'object' } as const;
let dir: string;
let server: FakeServer;
let host: ToolHost;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-reload-'));
  server = await FakeServer.start();
});
afterEach(async () => {
  await host.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

/** Tool names of the host's `n`th advertise (1-based), waiting for it (the fake server's auto-answer reads them too). */
async function advertisedNames(n: number): Promise<string[]> {
  const frame = await poll(() => server.connections[0]?.frames.filter((f) => f.type === 'advertise')[n - 1], 5000, `advertise #${n}`);
  return frame.type === 'advertise' ? frame.tools.map((t) => t.name) : [];
}

const call = (id: string, tool: string) => ({ type: 'call', id, tool, input: {}, workspace: '/ws', agent: 'a', deadlineMs: 10_000 }) as const;

describe('ToolHost: changing the tool set while connected', () => {
  it('replaceCommands re-advertises once; a call in flight on a changed tool finishes with its old command', async () => {
    const fifo = join(dir, 'gate');
    execFileSync('mkfifo', [fifo]);
    const started = join(dir, 'started');
    const v1: CommandToolSpec = { name: 'slow', inputSchema: object, command: ['sh', '-c', `echo > '${started}'; read line < '${fifo}'; echo "v1 $line"`] };
    host = new ToolHost({ server: server.url, token: 't', logger: pino({ level: 'silent' }) }).tool('keep', { inputSchema: object }, () => 'kept');
    host.replaceCommands([v1]);
    await host.start();
    const conn = server.connections[0]!;
    expect(await advertisedNames(1)).toEqual(['keep', 'slow']);

    conn.send(call('c1', 'slow'));
    await poll(
      () =>
        readFile(started).then(
          () => true,
          () => false,
        ),
      5000,
      'the first call to start',
    );
    const advertised = new Promise((resolve) => host.once('advertised', resolve));
    const change = host.replaceCommands([
      { name: 'slow', inputSchema: object, command: ['echo', 'v2'] },
      { name: 'fresh', description: 'new', inputSchema: object, command: ['echo', 'fresh'] },
    ]);
    expect(change).toEqual({ added: ['fresh'], removed: [], changed: ['slow'] });
    expect(await advertisedNames(2)).toEqual(['keep', 'slow', 'fresh']);
    await advertised; // the server's answer is handled as after a connect
    await writeFile(fifo, 'go\n');
    expect(await conn.next('result')).toMatchObject({ id: 'c1', exitCode: 0, stdout: 'v1 go\n' });
    conn.send(call('c2', 'slow'));
    expect(await conn.next('result')).toMatchObject({ id: 'c2', exitCode: 0, stdout: 'v2\n' });

    // The same set again changes nothing and sends nothing; a bad set throws and changes nothing.
    const sent = conn.frames.length;
    expect(
      host.replaceCommands([
        { name: 'slow', inputSchema: object, command: ['echo', 'v2'] },
        { name: 'fresh', description: 'new', inputSchema: object, command: ['echo', 'fresh'] },
      ]),
    ).toEqual({
      added: [],
      removed: [],
      changed: [],
    });
    expect(() => host.replaceCommands([{ name: 'keep', inputSchema: object, command: ['true'] }])).toThrow(/in-process/);
    expect(() => host.replaceCommands([{ name: 'ok', inputSchema: object, command: [] }])).toThrow(TypeError);
    expect(conn.frames.length).toBe(sent);

    expect(host.replaceCommands([])).toEqual({ added: [], removed: ['slow', 'fresh'], changed: [] });
    expect(await advertisedNames(3)).toEqual(['keep']);
    expect(host.remove('keep')).toBe(true);
    expect(await advertisedNames(4)).toEqual([]);
    expect(host.remove('keep')).toBe(false);
    conn.send(call('c3', 'keep'));
    expect(await conn.next('result')).toMatchObject({ id: 'c3', exitCode: 127 });
    expect(conn.frames.filter((f) => f.type === 'advertise')).toHaveLength(4);
  });
});
