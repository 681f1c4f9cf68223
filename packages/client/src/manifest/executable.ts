/**
 * Whether a subprocess tool's program can be found and run, checked when a manifest is loaded, so
 * a host does not advertise a tool that cannot run (DESIGN §7).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, isAbsolute, resolve } from 'node:path';
import type { CommandSpec } from '../types.js';

/** Options of {@link checkExecutable}. */
export interface CheckExecutableOptions {
  /** Working directory of a tool without `cwd` (the host's `root`). Default `process.cwd()`. */
  root?: string;
  /** The environment the tool inherits; its `PATH` is searched unless the tool's own `env` sets one. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Find `spec.command[0]` the way the spawn will: a name with a `/` is a path (relative to the
 * tool's cwd); a bare name is looked up on `PATH` — the tool's own `env.PATH` when it sets one,
 * else the inherited one (an empty `PATH` entry is the tool's cwd).
 *
 * @returns `undefined` when it is a regular file this process may execute; otherwise why not, e.g.
 *   `"rg" is not on PATH` or `"/opt/x/run" is not executable`
 */
export async function checkExecutable(spec: CommandSpec, options: CheckExecutableOptions = {}): Promise<string | undefined> {
  const program = spec.command[0] ?? '';
  const cwd = resolve(options.root ?? process.cwd(), spec.cwd ?? '.');
  if (program.includes('/')) {
    const path = isAbsolute(program) ? program : resolve(cwd, program);
    const problem = await fileProblem(path);
    return problem === undefined ? undefined : `${JSON.stringify(program)} ${problem}`;
  }
  const searchPath = spec.env?.PATH ?? (options.env ?? process.env).PATH ?? '';
  for (const dir of searchPath.split(delimiter)) {
    if ((await fileProblem(resolve(cwd, dir, program))) === undefined) return undefined;
  }
  return `${JSON.stringify(program)} is not on PATH`;
}

/** `undefined` for an executable regular file, else `does not exist`, `is not a file` or `is not executable`. */
async function fileProblem(path: string): Promise<string | undefined> {
  try {
    if (!(await stat(path)).isFile()) return 'is not a file';
  } catch {
    return 'does not exist';
  }
  try {
    await access(path, constants.X_OK);
    return undefined;
  } catch {
    return 'is not executable';
  }
}
