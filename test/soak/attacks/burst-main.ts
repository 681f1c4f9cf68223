/**
 * `burstServer()` in a process of its own, so its hostile server's bursts do not run on the event
 * loop whose stalls `pnpm soak` measures. Usage: node … burst-main.ts SECONDS; prints the
 * {@link BurstReport} as one JSON line on stdout.
 */
import { burstServer } from './burst-server.js';

const seconds = Number(process.argv[2] ?? '10');
if (!Number.isFinite(seconds) || seconds < 1) throw new RangeError(`seconds must be ≥ 1, got ${process.argv[2]}`);
const report = await burstServer({ calls: 2_000, seconds, deadlineMs: 2_000, toolMs: 100 });
process.stdout.write(`${JSON.stringify(report)}\n`);
