/**
 * `pnpm bench --only live-cost` (issue 13): what s1–s4 lose to live-output support when tools do not
 * stream, with the asymmetry of the two server + host pairs measured and taken out.
 *
 * Two servers, A and B, stay up for the whole arm. Each repetition starts a fresh tool host for each
 * (in-process `echo`; live output on, or off with `liveOutput: false`), the roles cycling through
 * three layouts: A on / B off, A off / B on, and the **A/A control**, A off / B off. Per repetition and
 * shape: one warm-up segment on each pair, then A B B A rounds; the repetition's figures are each
 * pair's calls/s and CPU per call over all its segments. The CPU is each process's own
 * `process.cpuUsage()` (µs), server and host apart.
 *
 * If pair A runs `k` times as fast as pair B for reasons of its own (start order, where its memory or
 * CPU landed) and live output costs `c`, a repetition with A on measures `c·k`, one with B on `c / k`,
 * the control `k`. The figure is the geometric mean of the two orientations' medians, √(c·k · c/k) = c:
 * the asymmetry cancels whether or not it holds still between repetitions of one layout. The control
 * says how large `k` was (and the spread of its repetitions how far one pair moves alone).
 */
import { Helper } from './helpers.js';
import type { Segment } from './load.js';

const MiB = 1024 * 1024;

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * The s1–s4 shapes as `echo` calls (counts scaled down: only ratios matter). `rounds`: A B B A rounds
 * per repetition — more, shorter segments where a call is cheapest, so a burst of other work on the
 * machine falls on both pairs alike.
 */
const SHAPES = [
  { id: 's1', concurrency: 1, bytes: 100, count: 1000, rounds: 3 },
  { id: 's2', concurrency: 64, bytes: 100, count: 8000, rounds: 2 },
  { id: 's3', concurrency: 16, bytes: 64 * 1024, count: 800, rounds: 1 },
  { id: 's4', concurrency: 4, bytes: MiB, count: 40, rounds: 1 },
] as const;

/** Which pair has live output on in a repetition; `none`: the A/A control (both off). */
type Layout = 'A' | 'B' | 'none';
const LAYOUTS: readonly Layout[] = ['A', 'B', 'none'];

/** One pair's figures over its segments of one shape in one repetition. */
interface PairFigures {
  callsPerS: number;
  /** CPU per call, µs, of the server and of the host process. */
  serverUs: number;
  hostUs: number;
}

/** One shape in one repetition: pair A and pair B. */
interface Rep {
  layout: Layout;
  a: PairFigures;
  b: PairFigures;
}

export interface CostShape {
  id: string;
  /**
   * Calls/s live output on / off: geometric mean of the medians of the two orientations (A on, B on),
   * which cancels the pairs' own asymmetry; 1 = no cost, below 1 = live output costs.
   */
  ratio: number;
  /** CPU per call (server + host) off / on, the same way; below 1 = live output costs CPU. */
  cpuRatio: number;
  /** The same per process: server and host. */
  serverCpuRatio: number;
  hostCpuRatio: number;
  /** Calls/s on / off per repetition with A on, and with B on. */
  aOn: number[];
  bOn: number[];
  /** CPU per call (server + host) off / on per repetition with A on, and with B on. */
  aOnCpu: number[];
  bOnCpu: number[];
  /** The A/A control: calls/s A / B per repetition with both off, and the CPU per call B / A (server + host). */
  control: number[];
  controlCpu: number[];
  /** Medians over every repetition, µs per call, by role: server and host, live output on and off. */
  cpuUs: { serverOn: number; serverOff: number; hostOn: number; hostOff: number };
}

export interface CostResult {
  repetitions: number;
  shapes: CostShape[];
}

interface Side {
  server: Helper;
  url: string;
  host: Helper | undefined;
}

async function startHost(side: Side, live: boolean): Promise<void> {
  if (side.host) {
    await side.host.stop();
    side.host = undefined;
    await side.server.request('wait', { tools: 0 }); // the old session is gone before the new one connects
  }
  const { helper } = await Helper.start('live-host', {
    BENCH_URL: side.url,
    BENCH_FLOOD: 'true',
    BENCH_HOST_OPTIONS: JSON.stringify(live ? {} : { liveOutput: false }),
  });
  side.host = helper;
  await side.server.request('wait', { tools: 3 });
}

async function segment(side: Side, shape: (typeof SHAPES)[number], count: number): Promise<{ calls: number; seconds: number; serverUs: number; hostUs: number }> {
  const host = side.host!;
  const cpu = async () => {
    const [s, h] = await Promise.all([side.server.request('cpu'), host.request('cpu')]);
    return [Number(s.us), Number(h.us)] as const;
  };
  const before = await cpu();
  const s = (await side.server.request('load', { concurrency: shape.concurrency, bytes: shape.bytes, count })).segment as Segment;
  const after = await cpu();
  if (s.errors > 0) throw new Error(`live-cost ${shape.id}: ${s.firstError}`);
  return { calls: s.calls, seconds: s.seconds, serverUs: after[0] - before[0], hostUs: after[1] - before[1] };
}

function figures(segments: readonly { calls: number; seconds: number; serverUs: number; hostUs: number }[]): PairFigures {
  const sum = (f: (s: (typeof segments)[number]) => number) => segments.reduce((t, s) => t + f(s), 0);
  const calls = sum((s) => s.calls);
  return { callsPerS: calls / sum((s) => s.seconds), serverUs: sum((s) => s.serverUs) / calls, hostUs: sum((s) => s.hostUs) / calls };
}

/** √(median(xs) · median(ys)): the two orientations' medians, the pairs' asymmetry cancelled. */
const balanced = (xs: readonly number[], ys: readonly number[]): number => Math.sqrt(median(xs) * median(ys));

function summarize(id: string, reps: readonly Rep[]): CostShape {
  const live = reps.filter((r) => r.layout !== 'none');
  const onOff = (r: Rep) => (r.layout === 'A' ? { on: r.a, off: r.b } : { on: r.b, off: r.a });
  const total = (f: PairFigures) => f.serverUs + f.hostUs;
  const per = (layout: Layout, f: (on: PairFigures, off: PairFigures) => number) =>
    live
      .filter((r) => r.layout === layout)
      .map((r) => {
        const { on, off } = onOff(r);
        return f(on, off);
      });
  const both = (f: (on: PairFigures, off: PairFigures) => number) => balanced(per('A', f), per('B', f));
  const control = reps.filter((r) => r.layout === 'none');
  return {
    id,
    ratio: both((on, off) => on.callsPerS / off.callsPerS),
    cpuRatio: both((on, off) => total(off) / total(on)),
    serverCpuRatio: both((on, off) => off.serverUs / on.serverUs),
    hostCpuRatio: both((on, off) => off.hostUs / on.hostUs),
    aOn: per('A', (on, off) => on.callsPerS / off.callsPerS),
    bOn: per('B', (on, off) => on.callsPerS / off.callsPerS),
    aOnCpu: per('A', (on, off) => total(off) / total(on)),
    bOnCpu: per('B', (on, off) => total(off) / total(on)),
    control: control.map((r) => r.a.callsPerS / r.b.callsPerS),
    controlCpu: control.map((r) => total(r.b) / total(r.a)),
    cpuUs: {
      serverOn: median(live.map((r) => onOff(r).on.serverUs)),
      serverOff: median(live.map((r) => onOff(r).off.serverUs)),
      hostOn: median(live.map((r) => onOff(r).on.hostUs)),
      hostOff: median(live.map((r) => onOff(r).off.hostUs)),
    },
  };
}

/**
 * The arm: `repetitions` (a multiple of 3 keeps the layouts balanced) with fresh hosts each, call
 * counts of the s1–s4 shapes times `scale`.
 */
export async function liveCost(repetitions: number, scale: number): Promise<CostResult> {
  const sides: Side[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const { helper, ready } = await Helper.start('live-server');
      sides.push({ server: helper, url: String(ready.url), host: undefined });
    }
    const [a, b] = sides as [Side, Side];
    const reps = new Map<string, Rep[]>(SHAPES.map((s) => [s.id, []]));
    for (let r = 0; r < repetitions; r++) {
      const layout = LAYOUTS[r % LAYOUTS.length]!;
      await Promise.all([startHost(a, layout === 'A'), startHost(b, layout === 'B')]);
      for (const shape of SHAPES) {
        const count = Math.max(20, Math.round(shape.count * scale));
        await segment(a, shape, count); // warm-up
        await segment(b, shape, count);
        const sa = [];
        const sb = [];
        for (let k = 0; k < shape.rounds; k++) {
          sa.push(await segment(a, shape, count));
          sb.push(await segment(b, shape, count));
          sb.push(await segment(b, shape, count));
          sa.push(await segment(a, shape, count));
        }
        reps.get(shape.id)!.push({ layout, a: figures(sa), b: figures(sb) });
      }
    }
    return { repetitions, shapes: SHAPES.map((s) => summarize(s.id, reps.get(s.id)!)) };
  } finally {
    await Promise.all(sides.flatMap((s) => (s.host ? [s.host.stop(), s.server.stop()] : [s.server.stop()])));
  }
}

/** The arm's console line. */
export function liveCostReport(run: number, c: CostResult): string {
  const f = (x: number) => x.toFixed(3);
  const list = (xs: readonly number[]) => xs.map(f).join(' ');
  return [
    `run ${run} live s1–s4 with live output on / off (${c.repetitions} repetitions, pairs' roles swapped, asymmetry cancelled):`,
    ...c.shapes.map(
      (s) =>
        `  ${s.id}: calls/s on/off ${f(s.ratio)} (A on ${list(s.aOn)}; B on ${list(s.bOn)}); CPU/call off/on ${f(s.cpuRatio)} (A on ${list(s.aOnCpu)}; B on ${list(s.bOnCpu)}; server ${f(s.serverCpuRatio)}, host ${f(s.hostCpuRatio)}); ` +
        `µs/call on/off server ${s.cpuUs.serverOn.toFixed(1)}/${s.cpuUs.serverOff.toFixed(1)}, host ${s.cpuUs.hostOn.toFixed(1)}/${s.cpuUs.hostOff.toFixed(1)}; ` +
        `A/A control calls/s A/B ${list(s.control)}, CPU B/A ${list(s.controlCpu)}`,
    ),
  ].join('\n');
}
