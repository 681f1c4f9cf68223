/**
 * Issue 5 §7 — disk record safety: agent names and call ids are validated before they become path
 * segments, and no record is ever written outside the record root.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Executor } from '../src/executor/executor.js';
import { DiskRecord } from '../src/executor/record.js';
import { resolveServerConfig } from '../src/config.js';
import type { ToolInjection } from '../src/seam.js';

let sandbox: string;
let root: string;

beforeEach(async () => {
  sandbox = await mkdtemp(join(tmpdir(), 'toolwire-record-'));
  root = join(sandbox, 'records');
  await mkdir(root);
});
afterEach(async () => {
  await rm(sandbox, { recursive: true, force: true });
});

/** Every file and folder under `dir`, relative to it. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

const injection: ToolInjection = {
  tools: () => [{ name: 'echo', inputSchema: { type: 'object' } }],
  route: async () => ({ stdout: utf8('ok\n'), stderr: new Uint8Array(0), exitCode: 0 }),
};

const HOSTILE = [
  '..',
  '.',
  '../escape',
  '../../etc/passwd',
  'a/../../b',
  '/tmp/abs',
  '/',
  'a/b',
  'a\\..\\..\\b',
  'nul\0byte',
  '\0',
  '%2e%2e',
  '..%2f..',
  'x'.repeat(129),
  'x'.repeat(100_000),
  '',
  ' ',
  'ünïcode',
  '..\u2215..',
  'line\nbreak',
];

describe('disk record paths', () => {
  it.each(HOSTILE.map((v) => [JSON.stringify(v).slice(0, 40), v]))('refuses agent %s at once (TypeError) and writes nothing', async (_label, agent) => {
    const executor = new Executor({ injection, options: resolveServerConfig({ recordDir: root }).executor });
    expect(() => executor.execute({ name: 'echo', input: {}, agent })).toThrow(TypeError);
    expect(await tree(sandbox)).toEqual(['records']);
  });

  it.each(HOSTILE.map((v) => [JSON.stringify(v).slice(0, 40), v]))('refuses call id %s at once (TypeError) and writes nothing', async (_label, id) => {
    const executor = new Executor({ injection, options: resolveServerConfig({ recordDir: root }).executor });
    expect(() => executor.execute({ id, name: 'echo', input: {}, agent: 'agent' })).toThrow(TypeError);
    expect(await tree(sandbox)).toEqual(['records']);
  });

  it('DiskRecord.dirOf refuses every hostile segment, and never returns a path outside the root', () => {
    const record = new DiskRecord(root);
    for (const bad of HOSTILE) {
      expect(() => record.dirOf(bad, 'id')).toThrow(TypeError);
      expect(() => record.dirOf('agent', bad)).toThrow(TypeError);
    }
    for (const ok of ['...', '....', '-rf', 'a.b_c-d', 'x'.repeat(128)]) {
      const dir = record.dirOf(ok, ok);
      expect(relative(root, dir).split('/')).toEqual([ok, ok]);
      expect(dir.startsWith(`${root}/`)).toBe(true);
    }
  });

  it('writes the record of valid names inside the root only, whatever the tool name and input hold', async () => {
    const executor = new Executor({ injection, options: resolveServerConfig({ recordDir: root }).executor });
    const result = await executor.execute({ id: '...', name: 'echo', input: { path: '../../../../etc/passwd', '../x': '/abs' }, agent: 'x'.repeat(128) });
    expect(result.outcome).toBe('completed');
    expect(await tree(sandbox)).toEqual([
      'records',
      `records/${'x'.repeat(128)}`,
      `records/${'x'.repeat(128)}/...`,
      `records/${'x'.repeat(128)}/.../input.json`,
      `records/${'x'.repeat(128)}/.../output.json`,
    ]);
  });
});
