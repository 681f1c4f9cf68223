/**
 * Millisecond flags of the CLI (`--timeout MS`, `--connect-timeout MS`).
 */

/**
 * `text` as a positive whole number of ms; `fallback` when the flag was not given; `undefined` when
 * it is not a positive integer (the caller reports bad usage, exit 64).
 */
export function parseMs(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined) return fallback;
  const ms = Number(text);
  return /^\d+$/.test(text) && Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}
