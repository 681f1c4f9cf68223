/**
 * Millisecond flags of the CLI (`--timeout MS`, `--connect-timeout MS`, `--interval MS`).
 */
import { quotedArg } from './terminal-text.js';

/**
 * Largest millisecond flag, 2^31 − 1 ms (about 24.8 days): the longest a Node.js timer waits (a
 * longer one fires after 1 ms) and the longest call deadline a server keeps.
 */
export const MAX_MS = 2_147_483_647;

/**
 * `text` as a whole number of ms from 1 to {@link MAX_MS}; `fallback` when the flag was not given;
 * `undefined` otherwise (the caller reports bad usage with {@link msProblem}, exit 64).
 */
export function parseMs(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined) return fallback;
  const ms = Number(text);
  return /^\d+$/.test(text) && ms > 0 && ms <= MAX_MS ? ms : undefined;
}

/** The usage problem of a millisecond flag `parseMs` refused, e.g. `--timeout must be a positive integer (ms), got "0"; …`. */
export function msProblem(flag: string, text: string | undefined): string {
  return `${flag} must be a positive integer (ms), got ${quotedArg(text)}; the largest is ${MAX_MS}`;
}

/** `ms` capped at {@link MAX_MS}, for a timer whose delay is a sum of flags (deadline + grace + margin). */
export function timerMs(ms: number): number {
  return Math.min(ms, MAX_MS);
}
