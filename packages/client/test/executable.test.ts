import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkExecutable } from '../src/index.js';

const object = { type: 'object' } as const;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-exe-'));
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', 'runme'), '#!/bin/sh\n');
  await chmod(join(dir, 'bin', 'runme'), 0o755);
  await writeFile(join(dir, 'bin', 'plain'), 'not a program\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const cmd = (command: string[], extra: object = {}) => ({ inputSchema: object, command, ...extra });

describe('checkExecutable: the program the spawn would run', () => {
  it('finds a bare name on the inherited PATH, or on the tool’s own env.PATH when it sets one', async () => {
    expect(await checkExecutable(cmd(['sh']))).toBeUndefined();
    expect(await checkExecutable(cmd(['runme']), { env: { PATH: `/nonexistent:${join(dir, 'bin')}` } })).toBeUndefined();
    expect(await checkExecutable(cmd(['runme']), { env: { PATH: '/usr/bin' } })).toBe('"runme" is not on PATH');
    expect(await checkExecutable(cmd(['runme'], { env: { PATH: join(dir, 'bin') } }), { env: { PATH: '/usr/bin' } })).toBeUndefined();
    expect(await checkExecutable(cmd(['sh'], { env: { PATH: join(dir, 'bin') } }))).toBe('"sh" is not on PATH');
    expect(await checkExecutable(cmd(['plain']), { env: { PATH: join(dir, 'bin') } })).toBe('"plain" is not on PATH');
  });

  it('checks a path as it is (a relative one against the tool’s cwd): missing, a folder, not executable', async () => {
    expect(await checkExecutable(cmd([join(dir, 'bin', 'runme')]))).toBeUndefined();
    expect(await checkExecutable(cmd(['./bin/runme']), { root: dir })).toBeUndefined();
    expect(await checkExecutable(cmd(['./runme'], { cwd: 'bin' }), { root: dir })).toBeUndefined();
    expect(await checkExecutable(cmd(['/nonexistent/tool']))).toBe('"/nonexistent/tool" does not exist');
    expect(await checkExecutable(cmd([join(dir, 'bin')]))).toBe(`${JSON.stringify(join(dir, 'bin'))} is not a file`);
    expect(await checkExecutable(cmd([join(dir, 'bin', 'plain')]))).toBe(`${JSON.stringify(join(dir, 'bin', 'plain'))} is not executable`);
  });
});
