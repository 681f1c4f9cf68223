/**
 * The scenarios of issue 4 and their sizes. `full` is the real run; `quick` (`--quick`, CI smoke)
 * keeps every scenario but with fewer calls and hosts. Warm-ups are generous: toolwire runs far more
 * code per call than the baseline, and V8 needs thousands of calls to optimise it all.
 */

/** A load at one concurrency. */
export interface LoadShape {
  concurrency: number;
  bytes: number;
  count: number;
  warmup: number;
}

export interface Plan {
  s1: LoadShape;
  s2: LoadShape;
  s3: LoadShape;
  s4: LoadShape;
  /** Subprocess `cat`, one shape per concurrency. */
  s5: LoadShape[];
  s6: { hosts: number; hostProcesses: number; load: LoadShape };
  s7: LoadShape;
}

const KiB = 1024;
const MiB = 1024 * KiB;

export const fullPlan: Plan = {
  s1: { concurrency: 1, bytes: 100, count: 5_000, warmup: 5_000 },
  s2: { concurrency: 64, bytes: 100, count: 50_000, warmup: 20_000 },
  s3: { concurrency: 16, bytes: 64 * KiB, count: 5_000, warmup: 2_000 },
  s4: { concurrency: 4, bytes: MiB, count: 300, warmup: 100 },
  s5: [
    { concurrency: 1, bytes: 100, count: 500, warmup: 100 },
    { concurrency: 8, bytes: 100, count: 500, warmup: 100 },
  ],
  s6: { hosts: 2_000, hostProcesses: 4, load: { concurrency: 1, bytes: 100, count: 5_000, warmup: 5_000 } },
  s7: { concurrency: 16, bytes: 100, count: 5_000, warmup: 2_000 },
};

export const quickPlan: Plan = {
  s1: { concurrency: 1, bytes: 100, count: 1_000, warmup: 3_000 },
  s2: { concurrency: 64, bytes: 100, count: 10_000, warmup: 10_000 },
  s3: { concurrency: 16, bytes: 64 * KiB, count: 1_000, warmup: 1_000 },
  s4: { concurrency: 4, bytes: MiB, count: 60, warmup: 40 },
  s5: [
    { concurrency: 1, bytes: 100, count: 100, warmup: 30 },
    { concurrency: 8, bytes: 100, count: 100, warmup: 30 },
  ],
  s6: { hosts: 200, hostProcesses: 2, load: { concurrency: 1, bytes: 100, count: 1_000, warmup: 3_000 } },
  s7: { concurrency: 16, bytes: 100, count: 1_000, warmup: 1_000 },
};

/** A short label, e.g. `c=16 64 KiB`. */
export function shapeLabel(s: LoadShape): string {
  const size = s.bytes >= MiB ? `${s.bytes / MiB} MiB` : s.bytes >= KiB ? `${s.bytes / KiB} KiB` : `${s.bytes} B`;
  return `c=${s.concurrency} ${size}`;
}

/** `plan` with every call count and warm-up multiplied by `factor` (at least 1 call). */
export function scalePlan(plan: Plan, factor: number): Plan {
  if (!(factor > 0)) throw new RangeError(`--scale must be a positive number, got ${factor}`);
  const scale = (s: LoadShape): LoadShape => ({ ...s, count: Math.max(1, Math.round(s.count * factor)), warmup: Math.round(s.warmup * factor) });
  return {
    s1: scale(plan.s1),
    s2: scale(plan.s2),
    s3: scale(plan.s3),
    s4: scale(plan.s4),
    s5: plan.s5.map(scale),
    s6: { ...plan.s6, load: scale(plan.s6.load) },
    s7: scale(plan.s7),
  };
}
