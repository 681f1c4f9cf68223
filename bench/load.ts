/**
 * Closed-loop load: `concurrency` workers each issue one call, await it, issue the next, until
 * `count` calls are done. One run is a *segment*; the orchestrator interleaves segments of the arms
 * it compares and merges them with {@link summarize}, so both arms see the same machine noise.
 */
import { performance } from 'node:perf_hooks';

/** What one segment measured. */
export interface Segment {
  calls: number;
  errors: number;
  /** The first failing call's description, when any failed. */
  firstError?: string;
  seconds: number;
  /** CPU time (user + system) of the process that ran the load, µs (of the server role when a driver ran it: `arms.ts`). */
  cpuUs: number;
  /** CPU time of the driver process that ran the load, µs (door arms only). */
  driverCpuUs?: number;
  /** Latency of every call, µs. */
  latencies: Float64Array;
}

/** A merged measurement. Latencies in µs. */
export interface LoadStats {
  calls: number;
  seconds: number;
  callsPerSec: number;
  p50Us: number;
  p99Us: number;
  /** CPU time (user + system) of the server-role process per call, µs. */
  cpuUsPerCall: number;
}

/** Call `i` by `worker` (0 … concurrency − 1); resolves `undefined` on success or a short description of what went wrong. */
export type Call = (i: number, worker: number) => Promise<string | undefined>;

/**
 * Run `count` calls at `concurrency`, first a full GC when the process has `--expose-gc` and `gc` is
 * true (the default; the orchestrator passes false for a timed segment whose untimed re-warm just
 * ran that GC, see `arms.ts`).
 */
export async function runSegment(concurrency: number, count: number, call: Call, gc = true): Promise<Segment> {
  if (gc) (globalThis as { gc?: () => void }).gc?.();
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const latencies = new Float64Array(count);
  const worker = async (_: unknown, w: number): Promise<void> => {
    while (next < count) {
      const i = next++;
      const t0 = performance.now();
      const problem = await call(i, w);
      latencies[i] = (performance.now() - t0) * 1000;
      if (problem !== undefined) {
        errors++;
        firstError ??= problem;
      }
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const segment: Segment = { calls: count, errors, seconds, cpuUs: cpu.user + cpu.system, latencies };
  if (firstError !== undefined) segment.firstError = firstError;
  return segment;
}

/** Nearest-rank percentile `q` (0–1) of sorted values. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Merge segments: calls/s over the summed time, percentiles over every call. */
export function summarize(segments: Segment[]): LoadStats {
  const calls = segments.reduce((n, s) => n + s.calls, 0);
  const seconds = segments.reduce((n, s) => n + s.seconds, 0);
  const all = new Float64Array(calls);
  let offset = 0;
  for (const s of segments) {
    all.set(s.latencies, offset);
    offset += s.calls;
  }
  all.sort();
  return {
    calls,
    seconds,
    callsPerSec: calls / seconds,
    p50Us: percentile(all, 0.5),
    p99Us: percentile(all, 0.99),
    cpuUsPerCall: segments.reduce((n, s) => n + s.cpuUs, 0) / calls,
  };
}

/** A JSON object whose JSON text is exactly `bytes` long: `{"data":"xxx…"}`. */
export function makeInput(bytes: number): { data: string } {
  return { data: 'x'.repeat(Math.max(0, bytes - 11)) };
}
