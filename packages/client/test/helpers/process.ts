/** Process helpers for tests: bounded polling and "is this pid gone". */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/** Poll `check` every 10 ms until it returns a truthy value, or throw after `timeoutMs`. */
export async function poll<T>(check: () => T | Promise<T>, timeoutMs = 5000, what = 'condition'): Promise<NonNullable<Awaited<T>>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * True when `pid` no longer runs: `kill(pid, 0)` fails with ESRCH, or the process is a zombie.
 * Zombies count as gone because an orphaned grandchild is reparented to PID 1, and the PID 1 of
 * some sandboxes/containers never reaps — the process is dead, only its table entry remains.
 */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/** Best-effort SIGKILL, for cleanup in `afterEach`. */
export function killQuietly(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Per-test scratch space for the calling test file: a fresh temporary directory (`scratch.dir`)
 * and pids to SIGKILL (`scratch.track`), both cleaned up after each test. Call at module level.
 */
export function useScratch(prefix: string): { readonly dir: string; track(pid: number): number; readPid(file: string): Promise<number> } {
  let dir = '';
  const pids: number[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const pid of pids.splice(0)) killQuietly(pid);
    await rm(dir, { recursive: true, force: true });
  });
  const track = (pid: number): number => {
    pids.push(pid);
    return pid;
  };
  return {
    get dir() {
      return dir;
    },
    track,
    /** The pid a tool wrote to `file` (polled for up to 5 s), tracked for cleanup. */
    readPid: async (file) => track(Number(await poll(async () => (await readFile(file, 'utf8').catch(() => '')).trim(), 5000, `pid in ${file}`))),
  };
}
