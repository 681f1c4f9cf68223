/**
 * One CLI test file's sandbox: a fresh `TOOLWIRE_HOME` per test, the child processes and cleanups the
 * test started, all undone after each test (children SIGKILLed if still running, cleanups in reverse
 * order, the home removed). Call `cliSandbox()` once at the top level of a test file: it registers
 * the file's `beforeEach`/`afterEach` hooks.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../../test/source-node.js';
import { type TestIO, testIO } from './cli-io.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's root (the working directory of spawned CLI processes). */
export const repoRoot = join(here, '..', '..', '..', '..');
/** The CLI's entry point, run from source under tsx. */
export const cliMain = join(here, '..', '..', 'src', 'main.ts');

/** What a finished `toolwire` process left: its exit status and everything it wrote. */
export interface CliExit {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliSandbox {
  /** This test's `TOOLWIRE_HOME` (a new temporary directory per test). */
  readonly home: string;
  /** Processes to SIGKILL after the test if they are still running. */
  readonly children: ChildProcess[];
  /** Undone after the test, last pushed first. */
  readonly cleanups: (() => Promise<unknown>)[];
  /** Injected CLI streams whose environment is `TOOLWIRE_HOME` plus `env`. */
  readonly io: (env?: NodeJS.ProcessEnv, stdin?: string | Buffer) => TestIO;
  /**
   * `toolwire ARGS…` as its own process (under tsx, stdin ignored); `done` resolves at 'close' (not
   * 'exit': at 'exit' the child's last output may still be unread in its pipes).
   */
  readonly toolwire: (args: string[], env?: NodeJS.ProcessEnv) => { child: ChildProcess; done: Promise<CliExit> };
}

/** Registers the hooks of a sandbox whose homes are named `toolwire-<prefix>-…`; see {@link CliSandbox}. */
export function cliSandbox(prefix: string): CliSandbox {
  let home = '';
  const children: ChildProcess[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), `toolwire-${prefix}-`));
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await rm(home, { recursive: true, force: true });
  });

  return {
    get home() {
      return home;
    },
    children,
    cleanups,
    io: (env = {}, stdin = '') => testIO({ TOOLWIRE_HOME: home, ...env }, stdin),
    toolwire: (args, env = {}) => {
      const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, cliMain, ...args], {
        cwd: repoRoot,
        env: { ...process.env, TOOLWIRE_HOME: home, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const done = once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr }));
      return { child, done };
    },
  };
}
