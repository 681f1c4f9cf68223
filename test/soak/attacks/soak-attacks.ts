/**
 * The issue-11 attacks that `pnpm soak` runs alongside its kills: a storm host (advertises of novel
 * schemas, with its own host token), a slowloris client (unauthenticated headers, bodies and
 * upgrades) against the soak's server, and a burst server (a hostile server throwing bursts of
 * calls at a real `toolwire host` of its own, in a process of its own: `burst-main.ts`). Each is
 * bounded in time and stops by itself.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SOURCE_NODE_ARGS } from '../../source-node.js';
import type { BurstReport } from './burst-server.js';
import { slowloris, type SlowlorisReport } from './slowloris.js';
import { schemaStorm, type StormCounts } from './storm.js';

const run = promisify(execFile);

/** Run the burst server in its own process for `seconds`; resolves with its report. */
async function burstInChild(seconds: number): Promise<BurstReport> {
  const main = fileURLToPath(new URL('./burst-main.ts', import.meta.url));
  const { stdout } = await run(process.execPath, [...SOURCE_NODE_ARGS, main, String(seconds)], { timeout: (seconds + 120) * 1_000, maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as BurstReport;
}

/** What to attack. Times in ms. */
export interface SoakAttackOptions {
  /** The soak server's host URL (`ws://127.0.0.1:PORT`). */
  url: string;
  /** A host token of the server, for the storm host. */
  stormToken: string;
  durationMs: number;
  /** Which attacks to run (default all three). */
  kinds?: readonly ('storm' | 'slowloris' | 'burst')[];
}

export interface SoakAttackReport {
  storm?: StormCounts;
  slowloris?: SlowlorisReport;
  burst?: BurstReport;
}

/** Run the attacks for `durationMs`; resolves with what each did. Never rejects (a failed attack is reported as absent). */
export async function runSoakAttacks(options: SoakAttackOptions): Promise<SoakAttackReport> {
  const kinds = new Set(options.kinds ?? ['storm', 'slowloris', 'burst']);
  const report: SoakAttackReport = {};
  const jobs: Promise<void>[] = [];
  if (kinds.has('storm')) {
    jobs.push(
      schemaStorm({ url: options.url, token: options.stormToken, durationMs: options.durationMs }).then(
        (r) => void (report.storm = r),
        (error: unknown) => console.error('soak: storm failed', error),
      ),
    );
  }
  if (kinds.has('slowloris')) {
    jobs.push(
      slowloris({ url: options.url, durationMs: options.durationMs, connections: 30, trickleMs: 500 }).then(
        (r) => void (report.slowloris = r),
        (error: unknown) => console.error('soak: slowloris failed', error),
      ),
    );
  }
  if (kinds.has('burst')) {
    jobs.push(
      burstInChild(Math.max(1, Math.round(options.durationMs / 1_000))).then(
        (r) => void (report.burst = r),
        (error: unknown) => console.error('soak: burst failed', error),
      ),
    );
  }
  await Promise.all(jobs);
  return report;
}

/** True when an attack saw the system misbehave: a burst call unanswered, a tool started after its answer or left running. */
export function attackFailed(report: SoakAttackReport): boolean {
  const b = report.burst;
  return b !== undefined && (b.unanswered > 0 || b.startedAfterAnswer > 0 || b.startedThoughRefused > 0 || b.leftover > 0);
}

/** One summary line per attack. */
export function describeAttacks(report: SoakAttackReport): string[] {
  const lines: string[] = [];
  const s = report.storm;
  if (s)
    lines.push(
      `storm host: ${s.advertises} advertises (${s.toolsSent} tools), ${s.accepted} accepted, ${s.rejected} rejected (${s.budgetRefused} over budget), closes ${JSON.stringify(s.closes)}`,
    );
  const l = report.slowloris;
  if (l)
    lines.push(`slowloris: opened ${l.total.opened}, closed by the server ${l.total.closedByServer}, answered ${l.total.answered}, peak open ${l.total.peakOpen}`);
  const b = report.burst;
  if (b) {
    lines.push(
      `burst server: ${b.bursts} bursts, ${b.sent} calls, unanswered ${b.unanswered}, by exit ${JSON.stringify(b.byExitCode)}, peak tools ${b.peakTools}, started after answer ${b.startedAfterAnswer}, leftover ${b.leftover}`,
    );
  }
  return lines;
}
