/** Read a manifest file from disk (DESIGN §7). */
import { dirname, resolve } from 'node:path';
import type { CommandToolSpec } from '../types.js';
import { ManifestError } from './errors.js';
import { parseManifest } from './parse.js';
import { readBounded } from './read-bounded.js';
import { findRepeatedKey } from './repeated-key.js';

/** Largest manifest file read, bytes. 4 MiB. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/**
 * Read and parse the manifest at `path` (JSON, at most {@link MAX_MANIFEST_BYTES}); relative `cwd`
 * values resolve against the manifest's directory. See {@link parseManifest} for the shapes.
 * `${TOOLWIRE_MANIFEST_DIR}` expands to the manifest's absolute directory, so a manifest can name
 * scripts that ship next to it (`"command": ["node", "${TOOLWIRE_MANIFEST_DIR}/tools/x.mjs"]`).
 *
 * @param env variables for `${VAR}` expansion; default `process.env` (plus `TOOLWIRE_MANIFEST_DIR`)
 * @throws ManifestError (unreadable file, not JSON, too large, a key repeated in one object, or
 *   invalid) with a message starting
 *   `manifest <path>: `
 */
export async function loadManifest(path: string, env: NodeJS.ProcessEnv = process.env): Promise<CommandToolSpec[]> {
  const file = resolve(path);
  return toolsOf(readDocument(await readManifestText(file, path), path), file, path, env);
}

/**
 * The text of the manifest file `file` (`path` as the user gave it, for messages), read once with
 * {@link readBounded}. @throws ManifestError `manifest <path>: cannot read: …`
 */
export async function readManifestText(file: string, path: string): Promise<string> {
  try {
    return (await readBounded(file, MAX_MANIFEST_BYTES)).toString('utf8');
  } catch (error) {
    throw new ManifestError('', `cannot read: ${(error as Error).message}`, path);
  }
}

/** The JSON value of a manifest's `text`. @throws ManifestError not valid JSON, or a key repeated in one object */
export function readDocument(text: string, path: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ManifestError('', `not valid JSON: ${(error as Error).message}`, path);
  }
  const repeated = findRepeatedKey(text);
  if (repeated !== undefined) throw new ManifestError(repeated.path, `is given twice in one object (line ${repeated.line}): JSON keeps only the last`, path);
  return value;
}

/** The tools of the manifest `value` read from `file` (see {@link parseManifest}). @throws ManifestError naming `path` */
export function toolsOf(value: unknown, file: string, path: string, env: NodeJS.ProcessEnv): CommandToolSpec[] {
  try {
    const baseDir = dirname(file);
    return parseManifest(value, { baseDir, env: { ...env, TOOLWIRE_MANIFEST_DIR: baseDir } });
  } catch (error) {
    if (error instanceof ManifestError) throw new ManifestError(error.keyPath, error.problem, path);
    throw error;
  }
}
