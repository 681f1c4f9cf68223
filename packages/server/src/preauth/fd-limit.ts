/**
 * The process's open-files limit and the connection defaults sized from it (issue 11 §2). Node has
 * no `getrlimit`: on Linux the soft `Max open files` of `/proc/self/limits` is read (Node raises its
 * soft limit to the hard one at start, so this is the limit the process really has); elsewhere, or
 * when the file cannot be read, {@link FALLBACK_OPEN_FILES} is assumed and the start log says so.
 */
import { readFileSync } from 'node:fs';

/** Descriptors kept out of every budget for the process itself (stdio, event loop, record writes, watchers, logs). */
export const RESERVED_DESCRIPTORS = 64;
/** The open-files limit assumed when it cannot be read (a common soft default). */
export const FALLBACK_OPEN_FILES = 1024;

/** Largest default of `maxPreAuthConnections`, `maxPreAuthPerAddress` and `maxConnections` (with an ample limit). */
export const PreAuthCeilings = Object.freeze({ maxPreAuthConnections: 1024, maxPreAuthPerAddress: 64, maxConnections: 1024 });

/** The open-files limit and where it came from. */
export interface OpenFilesLimit {
  /** Soft limit on open descriptors; `Infinity` for `unlimited`. */
  limit: number;
  /** `/proc/self/limits`, or `fallback` when it could not be read (then `why` says why). */
  source: '/proc/self/limits' | 'fallback';
  why?: string;
}

/**
 * The soft `Max open files` value of a `/proc/<pid>/limits` text: a number, `Infinity` for
 * `unlimited`, `undefined` when the line is missing or unreadable.
 */
export function parseOpenFilesLimit(text: string): number | undefined {
  const match = /^Max open files\s+(\S+)\s+\S+/m.exec(text);
  if (!match) return undefined;
  if (match[1] === 'unlimited') return Infinity;
  const value = Number(match[1]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/** Read this process's open-files limit; never throws (falls back to {@link FALLBACK_OPEN_FILES}). */
export function readOpenFilesLimit(path = '/proc/self/limits'): OpenFilesLimit {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return { limit: FALLBACK_OPEN_FILES, source: 'fallback', why: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
  }
  const limit = parseOpenFilesLimit(text);
  if (limit === undefined) return { limit: FALLBACK_OPEN_FILES, source: 'fallback', why: `no "Max open files" line in ${path}` };
  return { limit, source: '/proc/self/limits' };
}

/** Connection defaults that fit an open-files limit. */
export interface SizedDefaults {
  maxPreAuthConnections: number;
  maxPreAuthPerAddress: number;
  maxConnections: number;
}

/**
 * Defaults sized from an open-files `limit`. Of the budget `limit − 64` (at least 16), unauthenticated
 * connections get an eighth (at least 8, at most 1024) and each address a quarter of that (at least
 * 2, at most 64); host connections get half (at least 1, at most 1024). The rest — at least three
 * eighths — stays free for authenticated MCP callers and the process. E.g. a limit of 1024 gives
 * 120 / 30 / 480; 256 gives 24 / 6 / 96; 4096 or more gives 504+ / 64 / 1024.
 */
export function sizeFromOpenFiles(limit: number): SizedDefaults {
  const budget = Math.max(16, Math.min(limit, 1 << 30) - RESERVED_DESCRIPTORS);
  const clamp = (value: number, low: number, high: number): number => Math.max(low, Math.min(high, Math.floor(value)));
  const maxPreAuthConnections = clamp(budget / 8, 8, PreAuthCeilings.maxPreAuthConnections);
  return {
    maxPreAuthConnections,
    maxPreAuthPerAddress: clamp(maxPreAuthConnections / 4, 2, PreAuthCeilings.maxPreAuthPerAddress),
    maxConnections: clamp(budget / 2, 1, PreAuthCeilings.maxConnections),
  };
}
