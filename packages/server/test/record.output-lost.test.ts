/**
 * A call whose `output.json` cannot be written (a full disk, EIO) still answers its caller; its
 * record must not say at the next start that the server stopped while it was in flight (69,
 * `interrupted`). The executor renames `input.json` to `input.ended.<exit code>.json` (a rename
 * needs no free space), and recovery completes such a record with capture 70 (`host_error`) whose
 * reason line names the exit code the caller got, then puts `input.json` back.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resolveServerConfig } from '../src/config.js';
import { Executor } from '../src/executor/executor.js';
import { DiskRecord } from '../src/executor/record.js';
import { INTERRUPTED_REASON, OUTPUT_LOST_REASON, closeInterruptedRecords } from '../src/executor/record-recovery.js';
import type { Logger } from '../src/options.js';
import type { ToolInjection } from '../src/seam.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'toolwire-output-lost-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

const json = async (path: string): Promise<Record<string, unknown>> => JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
const never = (): boolean => false;
const noError = (error: unknown): void => {
  throw error;
};
const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as never;

/** An executor whose one tool `fail3` ends with exit code 3, and whose `output.json` writes fail with ENOSPC. */
function executorWithFullDisk(): Executor {
  const injection: ToolInjection = {
    tools: () => [{ name: 'fail3', inputSchema: { type: 'object' } }],
    route: () => Promise.resolve({ stdout: utf8('partial\n'), stderr: utf8('boom\n'), exitCode: 3 }),
  };
  vi.spyOn(DiskRecord.prototype, 'writeOutput').mockRejectedValue(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
  return new Executor({ injection, options: resolveServerConfig({ recordDir: root, logger: silent }).executor });
}

describe('a call whose output.json could not be written', () => {
  it('answers its caller, and its record says so at the next start: 70 naming the exit code, not 69 "interrupted"', async () => {
    const executor = executorWithFullDisk();
    const result = await executor.execute({ id: 'c1', name: 'fail3', input: { a: 1 }, agent: 'agent' });
    expect(result.outcome).toBe('completed');
    expect((result as { capture: { exitCode: number } }).capture.exitCode).toBe(3);
    const dir = join(root, 'agent', 'c1');
    expect(await readdir(dir)).toEqual(['input.ended.3.json']); // the marker: input.json renamed, no new bytes
    vi.restoreAllMocks(); // the disk has room again at the next start

    const report = await closeInterruptedRecords(new DiskRecord(root), never, noError);
    expect(report).toEqual({ closed: 0, outputLost: 1, tempFilesRemoved: 0, failed: 0 });
    expect((await readdir(dir)).sort()).toEqual(['input.json', 'output.json']);
    expect(await json(join(dir, 'input.json'))).toEqual({ id: 'c1', name: 'fail3', input: { a: 1 } });
    const output = await json(join(dir, 'output.json'));
    expect(output).toMatchObject({ id: 'c1', stdout: '', exitCode: 70, failure: 'host_error' });
    expect(output.stderr).toBe(`toolwire: ${OUTPUT_LOST_REASON(3)}\n`);
    expect(OUTPUT_LOST_REASON(3)).toBe('the call ended with exit code 3, but its output.json could not be written; its output is not recorded');
    expect(output).not.toHaveProperty('interrupted');
    expect(output.stderr).not.toContain(INTERRUPTED_REASON);
  });

  it('a recovery cut short after output.json only puts input.json back; a second run changes nothing', async () => {
    const dir = join(root, 'agent', 'c2');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const input = `${JSON.stringify({ id: 'c2', name: 'fail3', input: {} })}\n`;
    await writeFile(join(dir, 'input.ended.0.json'), input, { mode: 0o600 });
    await writeFile(join(dir, 'output.json'), '{"kept": true}\n', { mode: 0o600 });
    expect(await closeInterruptedRecords(new DiskRecord(root), never, noError)).toEqual({ closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
    expect((await readdir(dir)).sort()).toEqual(['input.json', 'output.json']);
    expect(await readFile(join(dir, 'input.json'), 'utf8')).toBe(input);
    expect(await json(join(dir, 'output.json'))).toEqual({ kept: true });
    expect(await closeInterruptedRecords(new DiskRecord(root), never, noError)).toEqual({ closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
  });

  it('a record left in flight is still closed 69 "interrupted" (crash recovery unchanged)', async () => {
    const dir = join(root, 'agent', 'c3');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(join(dir, 'input.json'), `${JSON.stringify({ id: 'c3', name: 'x', input: {} })}\n`, { mode: 0o600 });
    expect(await closeInterruptedRecords(new DiskRecord(root), never, noError)).toEqual({ closed: 1, outputLost: 0, tempFilesRemoved: 0, failed: 0 });
    expect(await json(join(dir, 'output.json'))).toMatchObject({ exitCode: 69, failure: 'unavailable', interrupted: true });
  });
});
