/**
 * Issue 11 §5 — crash recovery of disk records: a record with `input.json` and no `output.json` is
 * completed at the next start with capture 69, the reason line and `interrupted: true`; complete
 * records, calls still in flight in this process and anything outside the record layout are left
 * alone; the count is logged. (The SIGKILL-and-restart case with real processes is in
 * test/security/crash-recovery.test.ts.)
 */
import { mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Executor } from '../src/executor/executor.js';
import { DiskRecord } from '../src/executor/record.js';
import { INTERRUPTED_REASON, closeInterruptedRecords } from '../src/executor/record-recovery.js';
import type { Logger } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import type { ToolInjection } from '../src/seam.js';
import { ToolwireServer } from '../src/toolwire-server.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'toolwire-recovery-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A record directory with the given files (name → content). */
async function call(agent: string, id: string, files: Record<string, string>): Promise<string> {
  const dir = join(root, agent, id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content, { mode: 0o600 });
  return dir;
}

const input = (id: string) => `${JSON.stringify({ id, name: 'alpha__slow', input: {} })}\n`;
const json = async (path: string): Promise<Record<string, unknown>> => JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
const never = (): boolean => false;
const noError = (error: unknown): void => {
  throw error;
};

describe('closing interrupted records', () => {
  it('completes input.json-only records with 69, the reason line and interrupted: true', async () => {
    const dir = await call('agent', 'c1', { 'input.json': input('c1') });
    const started = new Date('2030-01-02T03:04:05.000Z');
    await utimes(join(dir, 'input.json'), started, started);
    const closedAt = new Date('2030-01-02T03:05:00.000Z');
    const report = await closeInterruptedRecords(new DiskRecord(root), never, noError, () => closedAt);
    expect(report).toEqual({ closed: 1, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
    expect(await json(join(dir, 'output.json'))).toEqual({
      id: 'c1',
      stdout: '',
      stderr: `toolwire: ${INTERRUPTED_REASON}\n`,
      exitCode: 69,
      startedAt: started.toISOString(),
      endedAt: closedAt.toISOString(),
      failure: 'unavailable',
      interrupted: true,
    });
    expect(INTERRUPTED_REASON).toBe('the server stopped while the call was in flight');
    expect((await stat(join(dir, 'output.json'))).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual(['input.json', 'output.json']); // no temp file left
  });

  it('leaves complete records alone, removes the temp files a cut-short write left, and is idempotent', async () => {
    const done = await call('agent', 'done', { 'input.json': input('done'), 'output.json': '{"exitCode":0}\n' });
    const cut = await call('agent', 'cut', { 'input.json': input('cut'), 'output.json.0123456789ab.tmp': '{"stdout":"par' });
    const other = await call('other', 'x', { 'input.json': input('x') });
    const record = new DiskRecord(root);
    expect(await closeInterruptedRecords(record, never, noError)).toEqual({ closed: 2, outputLost: 0, tempFilesRemoved: 1, failed: 0 });
    expect(await readFile(join(done, 'output.json'), 'utf8')).toBe('{"exitCode":0}\n');
    expect((await readdir(cut)).sort()).toEqual(['input.json', 'output.json']);
    expect((await json(join(other, 'output.json'))).interrupted).toBe(true);
    const before = await readFile(join(cut, 'output.json'), 'utf8');
    expect(await closeInterruptedRecords(record, never, noError)).toEqual({ closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
    expect(await readFile(join(cut, 'output.json'), 'utf8')).toBe(before);
  });

  it('visits only the record layout: no symlinked folder is followed, no invalid name, no file in place of a folder', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'toolwire-outside-'));
    try {
      await mkdir(join(outside, 'c'), { recursive: true });
      await writeFile(join(outside, 'c', 'input.json'), input('c'));
      await symlink(outside, join(root, 'linked'));
      await call('agent', 'bad name', { 'input.json': input('bad') });
      await writeFile(join(root, 'stray.json'), '{}');
      await call('agent', 'no-input', { 'input.json.0123456789ab.tmp': '{"id":' });
      expect(await closeInterruptedRecords(new DiskRecord(root), never, noError)).toEqual({ closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
      expect(await readdir(join(outside, 'c'))).toEqual(['input.json']);
      expect(await readdir(join(root, 'agent', 'bad name'))).toEqual(['input.json']);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('does nothing when the record root does not exist yet', async () => {
    expect(await closeInterruptedRecords(new DiskRecord(join(root, 'missing')), never, noError)).toEqual({
      closed: 0,
      outputLost: 0,
      tempFilesRemoved: 0,
      failed: 0,
    });
  });
});

describe('the executor and the server', () => {
  it('never closes the record of a call in flight in this process', async () => {
    let release!: () => void;
    const injection: ToolInjection = {
      tools: () => [{ name: 'slow', inputSchema: { type: 'object' } }],
      route: () => new Promise((resolve) => (release = () => resolve({ stdout: utf8('late\n'), stderr: new Uint8Array(0), exitCode: 0 }))),
    };
    const executor = new Executor({ injection, options: resolveServerConfig({ recordDir: root }).executor });
    await call('agent', 'old', { 'input.json': input('old') });
    const running = executor.execute({ id: 'live', name: 'slow', input: {}, agent: 'agent' });
    const inputWritten = async (): Promise<void> => {
      for (let i = 0; i < 500 && !(await readdir(join(root, 'agent', 'live')).catch(() => [] as string[])).includes('input.json'); i++)
        await new Promise((r) => setTimeout(r, 5));
    };
    await inputWritten();
    expect(await executor.closeInterruptedRecords()).toEqual({ closed: 1, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
    expect(await readdir(join(root, 'agent', 'live'))).toEqual(['input.json']);
    release();
    expect((await running).outcome).toBe('completed');
    expect((await json(join(root, 'agent', 'live', 'output.json'))).exitCode).toBe(0);
  });

  it('closes them at listen, before the port opens, and logs how many at info', async () => {
    await call('agent', 'a', { 'input.json': input('a') });
    await call('agent', 'b', { 'input.json': input('b') });
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const keep = (obj: unknown, msg?: string): void => void lines.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' });
    const logger: Logger = { debug: () => {}, info: keep, warn: keep, error: keep } as never;
    const server = new ToolwireServer({ recordDir: root, logger });
    try {
      await server.listen(0, '127.0.0.1');
      const line = lines.find((l) => l.msg.includes('interrupted'));
      expect(line?.msg).toBe('closed 2 disk record(s) of calls interrupted by an earlier server stop');
      expect(line?.obj).toMatchObject({ recordDir: root, closed: 2, failed: 0 });
      expect((await json(join(root, 'agent', 'a', 'output.json'))).exitCode).toBe(69);
    } finally {
      await server.close();
    }
  });
});
