/** Issue 10 — the state folder's lock: changes by two processes at once never lose an update. */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_FILE, StateError, withStateLock } from '../src/state.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-lock-'));
  dirs.push(dir);
  return dir;
}

describe('withStateLock', () => {
  it('runs changes one at a time and removes the lock after each, also after a throw', async () => {
    const dir = await folder();
    let inside = 0;
    let most = 0;
    const change = async (): Promise<void> => {
      inside += 1;
      most = Math.max(most, inside);
      await new Promise((resolve) => setImmediate(resolve));
      inside -= 1;
    };
    await Promise.all(Array.from({ length: 5 }, () => withStateLock(dir, change)));
    expect(most).toBe(1);
    await expect(withStateLock(dir, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(stat(join(dir, LOCK_FILE))).rejects.toThrow();
  });

  it('takes over a lock whose holder is gone (a killed command)', async () => {
    const dir = await folder();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    await writeFile(join(dir, LOCK_FILE), `${dead.stdout}\n`);
    expect(await withStateLock(dir, () => readFile(join(dir, LOCK_FILE), 'utf8'))).toBe(`${process.pid}\n`);
  });

  it('a lock held by a live process: waits, then 75 (EX_TEMPFAIL) naming the lock', async () => {
    const dir = await folder();
    await writeFile(join(dir, LOCK_FILE), `${process.ppid}\n`);
    const error = await withStateLock(dir, () => Promise.resolve()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateError);
    expect((error as StateError).exitCode).toBe(75);
    expect((error as StateError).message).toMatch(/is locked by another toolwire command/);
  }, 20_000);
});
