/**
 * Bench helpers' observability switch (issue 16, `pnpm bench --observe`): with `BENCH_OBSERVE=1` a
 * helper logs at info through pino to /dev/null through the destination `toolwire serve` and
 * `toolwire host` use for JSON on stderr (`HeldDestination`: lines held up to 10 ms, one write), and
 * the server keeps metrics; without it the logger is silent and metrics are off.
 */
import { openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ToolwireServerOptions } from '@toolwire/server';
import { HeldDestination } from '../../packages/cli/src/log-format.js';

/** True when this helper runs with observability on. */
export const observing = process.env.BENCH_OBSERVE === '1';

/** The part of pino used here (pino is a dependency of the packages, not of the workspace root: it is resolved from the server's). */
interface Pino {
  pino: (options: { level: string }, destination: unknown) => Logger;
}
/** The logging surface the server and the tool host take. */
type Logger = NonNullable<ToolwireServerOptions['logger']>;
const serverPackage = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'packages', 'server', 'package.json');
const { pino } = createRequire(serverPackage)('pino') as Pino;

/** A pino logger at info writing to /dev/null as the CLI writes to stderr. */
export function infoLogger(): Logger {
  return pino({ level: 'info' }, new HeldDestination(openSync('/dev/null', 'w')));
}
