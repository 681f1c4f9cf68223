/**
 * The scenarios of issues 4 and 12 and their sizes. `full` is the real run; `quick` (`--quick`, CI
 * smoke) keeps every scenario but with fewer calls and hosts. Warm-ups are generous and the same for
 * both arms of a comparison: toolwire runs far more code per call than the baseline, and V8 needs
 * thousands of calls to optimise it all (bench/README.md, "Warm-up").
 */

/** A load at one concurrency. */
export interface LoadShape {
  concurrency: number;
  bytes: number;
  count: number;
  warmup: number;
  /**
   * Untimed calls after the full GC that starts each measured segment, before its timed calls (same
   * for every arm; default 0: none). The GC drops hidden classes and optimised code of Node's timers,
   * `net` and ws (both arms) and ours; these calls let every arm's code re-optimise before timing.
   */
  rewarm?: number;
}

export interface Plan {
  s1: LoadShape;
  s2: LoadShape;
  s3: LoadShape;
  s4: LoadShape;
  /** Subprocess `cat`, one shape per concurrency. */
  s5: LoadShape[];
  /**
   * Many hosts: `hosts` connected (and as many host identities configured, plus `callers` caller
   * identities), the first `firstWave` of them first; held for 3 × `heartbeatMs`.
   */
  s6: { hosts: number; firstWave: number; hostProcesses: number; callers: number; heartbeatMs: number; load: LoadShape };
  s7: LoadShape;
  /** The MCP door against the MCP SDK's own server with the tool in-process, one shape per concurrency. */
  door: LoadShape[];
  /** The door with many identities configured against the door with one. */
  ids: { hosts: number; callers: number; load: LoadShape; failedUpgrades: number };
}

const KiB = 1024;
const MiB = 1024 * KiB;

export const fullPlan: Plan = {
  s1: { concurrency: 1, bytes: 100, count: 5_000, warmup: 5_000, rewarm: 2_500 },
  s2: { concurrency: 64, bytes: 100, count: 50_000, warmup: 20_000, rewarm: 5_000 },
  s3: { concurrency: 16, bytes: 64 * KiB, count: 5_000, warmup: 2_000 },
  s4: { concurrency: 4, bytes: MiB, count: 300, warmup: 100 },
  s5: [
    { concurrency: 1, bytes: 100, count: 500, warmup: 100 },
    { concurrency: 8, bytes: 100, count: 500, warmup: 100 },
  ],
  // 19,000 hosts: the machine's fd ceiling is 20,000 (ulimit -n); the server's default heartbeat.
  s6: {
    hosts: 19_000,
    firstWave: 10_000,
    hostProcesses: 4,
    callers: 1_000,
    heartbeatMs: 10_000,
    load: { concurrency: 1, bytes: 100, count: 5_000, warmup: 5_000 },
  },
  s7: { concurrency: 16, bytes: 100, count: 5_000, warmup: 2_000 },
  door: [
    { concurrency: 1, bytes: 100, count: 4_000, warmup: 5_000 },
    { concurrency: 16, bytes: 100, count: 8_000, warmup: 4_000 },
  ],
  ids: { hosts: 10_000, callers: 1_000, load: { concurrency: 16, bytes: 100, count: 8_000, warmup: 5_000 }, failedUpgrades: 20_000 },
};

export const quickPlan: Plan = {
  s1: { concurrency: 1, bytes: 100, count: 1_000, warmup: 3_000, rewarm: 500 },
  s2: { concurrency: 64, bytes: 100, count: 10_000, warmup: 10_000, rewarm: 2_000 },
  s3: { concurrency: 16, bytes: 64 * KiB, count: 1_000, warmup: 1_000 },
  s4: { concurrency: 4, bytes: MiB, count: 60, warmup: 40 },
  s5: [
    { concurrency: 1, bytes: 100, count: 100, warmup: 30 },
    { concurrency: 8, bytes: 100, count: 100, warmup: 30 },
  ],
  s6: { hosts: 200, firstWave: 100, hostProcesses: 2, callers: 10, heartbeatMs: 1_000, load: { concurrency: 1, bytes: 100, count: 1_000, warmup: 3_000 } },
  s7: { concurrency: 16, bytes: 100, count: 1_000, warmup: 1_000 },
  door: [
    { concurrency: 1, bytes: 100, count: 300, warmup: 500 },
    { concurrency: 16, bytes: 100, count: 1_000, warmup: 500 },
  ],
  ids: { hosts: 10_000, callers: 1_000, load: { concurrency: 16, bytes: 100, count: 1_000, warmup: 500 }, failedUpgrades: 500 },
};

/** A short label, e.g. `c=16 64 KiB`. */
export function shapeLabel(s: LoadShape): string {
  const size = s.bytes >= MiB ? `${s.bytes / MiB} MiB` : s.bytes >= KiB ? `${s.bytes / KiB} KiB` : `${s.bytes} B`;
  return `c=${s.concurrency} ${size}`;
}

/**
 * `plan` with every call count and warm-up multiplied by `factor` (at least 1 call); re-warms are
 * kept as they are, or dropped when `rewarm` is false (`--no-rewarm`, to measure what they change).
 */
export function scalePlan(plan: Plan, factor: number, rewarm = true): Plan {
  if (!(factor > 0)) throw new RangeError(`--scale must be a positive number, got ${factor}`);
  const scale = (s: LoadShape): LoadShape => ({
    ...s,
    count: Math.max(1, Math.round(s.count * factor)),
    warmup: Math.round(s.warmup * factor),
    ...(rewarm ? {} : { rewarm: 0 }),
  });
  return {
    s1: scale(plan.s1),
    s2: scale(plan.s2),
    s3: scale(plan.s3),
    s4: scale(plan.s4),
    s5: plan.s5.map(scale),
    s6: { ...plan.s6, load: scale(plan.s6.load) },
    s7: scale(plan.s7),
    door: plan.door.map(scale),
    ids: { ...plan.ids, load: scale(plan.ids.load) },
  };
}
