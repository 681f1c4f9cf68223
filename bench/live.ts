/**
 * `pnpm bench --only live` (issue 13): live output, every figure a ratio or a bound checked in one run.
 *
 * - **throughput**: a subprocess tool writing `bytes` of stdout (`yes … | head -c N`) streamed through a
 *   real tool host (spawn helper, binary `output` frames within the credit window) to a real server
 *   whose consumer (`RoutedCall.onOutput`) counts every chunk, against `child_process.spawn` of the
 *   same command read to the end in one process — attached (the default) and `detached` (as the tool
 *   host spawns: its own process group, and on Linux with autogroup its own CPU share). Runs alternate;
 *   the figure is the median over pairs of floor time / toolwire time (1 = as fast as the floor).
 * - **ttfb**: a tool that prints its own clock then sleeps; the consumer compares it with the server's
 *   clock at the first chunk (same machine clock; the tool's `date` runs before its printf, so the
 *   figure is conservative). p50 and p90 over `reps` calls.
 * - **big**: 50 MB of stdout with the limits raised so all of it is kept (server `maxPayload` 256 MiB,
 *   host and server `maxCaptureBytes` 64 MiB), streamed and not streamed (`liveOutput: false`, the
 *   whole capture in the result), each in fresh processes after 3 warm-up calls: the median wall
 *   time of 5 calls (each followed by a floor run) vs the median floor, and peak RSS above the settled RSS before the call (VmHWM reset) of the server, the host
 *   and its spawn helper.
 * - **backpressure**: a tool writing 1 GiB as fast as it can; the consumer reads nothing for 3 s,
 *   then reads freely for 3 s, then stops the call. Server and host memory above idle, what streamed
 *   while held, the latency of in-process calls on the same host meanwhile, the capture's marker.
 * - **frames**: CPU per 64 KiB chunk of log text to encode (host) and decode (server) one `output`
 *   frame, the JSON text form (UTF-8 `data`, escaped newlines, schema check) vs the binary form, in
 *   this process.
 * - **cost**: s1–s4 with live output on and off, the pairs' roles swapped and an A/A control
 *   (`live-cost.ts`).
 */
import { decodeHostMessage, decodeOutputFrame, encodeMessage, encodeOutputFrame, fromWire, toWire } from '@toolwire/protocol';
import { readFileSync } from 'node:fs';
import { Helper } from './helpers.js';
import { type CostResult, liveCost, liveCostReport } from './live-cost.js';
import { percentile } from './load.js';
import type { Segment } from './load.js';

const MiB = 1024 * 1024;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
/** CPU time of process `pid` so far (user + system), ms; 0 when it cannot be read (not Linux, gone). */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return 0;
  }
}
/** `/proc/<pid>/stat` counts CPU time in clock ticks (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;
const flood = (bytes: number): string => `yes 'live output bench: a line of build log text, 0123456789' | head -c ${bytes}`;

/** A server and one tool host (identity 0) in two fresh processes. */
interface Pair {
  server: Helper;
  host: Helper;
}

async function startPair(command: string, serverOptions: object = {}, hostOptions: object = {}): Promise<Pair> {
  const { helper: server, ready } = await Helper.start('live-server', { BENCH_SERVER_OPTIONS: JSON.stringify(serverOptions) });
  try {
    const { helper: host } = await Helper.start('live-host', {
      BENCH_URL: String(ready.url),
      BENCH_FLOOD: command,
      BENCH_HOST_OPTIONS: JSON.stringify(hostOptions),
    });
    await server.request('wait', { tools: 3 });
    return { server, host };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

const stopPair = (p: Pair): Promise<unknown> => Promise.all([p.host.stop(), p.server.stop()]);

async function floorMs(floor: Helper, command: string, detached: boolean, bytes: number, cpu?: number[]): Promise<number> {
  const f = await floor.request('flood', { command, detached });
  if (Number(f.bytes) !== bytes) throw new Error(`floor read ${String(f.bytes)} bytes`);
  cpu?.push(Number(f.cpuMs));
  return Number(f.ms);
}

async function streamMs(server: Helper, bytes: number, consumer = true): Promise<{ ms: number; chunks: number; captureBytes: number }> {
  const t = await server.request('stream', { name: 'flood', consumer });
  if (consumer && Number(t.streamed) !== bytes) throw new Error(`toolwire streamed ${String(t.streamed)} bytes`);
  return { ms: Number(t.ms), chunks: Number(t.chunks), captureBytes: Number(t.captureBytes) };
}

export interface ThroughputResult {
  bytes: number;
  pairs: { floorMs: number; detachedFloorMs: number; toolwireMs: number; chunks: number }[];
  /** Medians over pairs of floor time / toolwire time. */
  ratio: number;
  detachedRatio: number;
  toolwireMiBps: number;
  floorMiBps: number;
  detachedFloorMiBps: number;
  /**
   * CPU ms per MiB streamed (medians over pairs) of the server, the host and its spawn helper, and of
   * the floor's reader (attached): a count that holds on a loaded machine, where wall time does not.
   */
  cpuMsPerMiB: { server: number; host: number; helper: number; floorReader: number };
}

async function throughput(reps: number, bytes: number): Promise<ThroughputResult> {
  const command = flood(bytes);
  const pair = await startPair(command);
  const { helper: floor } = await Helper.start('live-floor');
  try {
    await streamMs(pair.server, bytes); // warm-up: the spawn helper, V8
    await floorMs(floor, command, false, bytes);
    const helperPid = Number((await pair.host.request('memory')).helperPid);
    const pids = [pair.server.pid, pair.host.pid, helperPid];
    const cpu: number[][] = [];
    const floorCpu: number[] = [];
    const streamed = async () => {
      const before = pids.map(cpuMs);
      const t = await streamMs(pair.server, bytes);
      cpu.push(pids.map((pid, k) => (cpuMs(pid) - before[k]!) / (bytes / MiB)));
      return t;
    };
    const pairs: ThroughputResult['pairs'] = [];
    for (let i = 0; i < reps; i++) {
      // A B C, C B A, …: drift and other work on the machine hit every arm alike.
      const arms = [() => floorMs(floor, command, false, bytes, floorCpu), () => floorMs(floor, command, true, bytes), streamed] as const;
      const order = i % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      const out: unknown[] = [];
      for (const k of order) out[k] = await arms[k]!();
      const tw = out[2] as { ms: number; chunks: number };
      pairs.push({ floorMs: out[0] as number, detachedFloorMs: out[1] as number, toolwireMs: tw.ms, chunks: tw.chunks });
    }
    const rate = (ms: number[]) => bytes / MiB / (median(ms) / 1000);
    return {
      bytes,
      pairs,
      ratio: median(pairs.map((p) => p.floorMs / p.toolwireMs)),
      detachedRatio: median(pairs.map((p) => p.detachedFloorMs / p.toolwireMs)),
      toolwireMiBps: rate(pairs.map((p) => p.toolwireMs)),
      floorMiBps: rate(pairs.map((p) => p.floorMs)),
      detachedFloorMiBps: rate(pairs.map((p) => p.detachedFloorMs)),
      cpuMsPerMiB: {
        server: median(cpu.map((c) => c[0]!)),
        host: median(cpu.map((c) => c[1]!)),
        helper: median(cpu.map((c) => c[2]!)),
        floorReader: median(floorCpu) / (bytes / MiB),
      },
    };
  } finally {
    await Promise.all([stopPair(pair), floor.stop()]);
  }
}

async function ttfb(reps: number): Promise<{ p50Ms: number; p90Ms: number; latencies: number[] }> {
  const pair = await startPair('true');
  try {
    await pair.server.request('ttfb', { reps: 3 }); // warm-up
    const latencies = (await pair.server.request('ttfb', { reps })).latencies as number[];
    const sorted = [...latencies].sort((a, b) => a - b);
    return { p50Ms: percentile(Float64Array.from(sorted), 0.5), p90Ms: percentile(Float64Array.from(sorted), 0.9), latencies };
  } finally {
    await stopPair(pair);
  }
}

export interface BigArm {
  /** Median wall time of the timed calls, ms. */
  ms: number;
  /** Wall time of each timed call, ms. */
  callsMs: number[];
  captureBytes: number;
  /** Peak RSS above the settled RSS before the call, KiB. */
  serverKiB: number;
  hostKiB: number;
  helperKiB: number;
}

/** Timed calls of each big arm (the first also gives the peak RSS); each is followed by a floor run. */
const BIG_CALLS = 5;
/**
 * Untimed calls before them, in each arm and of the floor. V8 sizes a fresh server's heap over its
 * first 50 MB calls: the socket reads' buffers count against its old-generation limit, so each of the
 * first three calls starts three mark-compacts and later calls one (`--trace-gc`; bench/README.md,
 * "live-big"). A server that keeps serving such calls is in the later state.
 */
const BIG_WARMUP = 3;

/**
 * 50 MB calls in fresh processes, streamed (`live`) or not: the median wall time of {@link BIG_CALLS}
 * calls, each followed by `afterCall` (a floor run, so floors and calls interleave); peak RSS of the first.
 */
async function bigArm(bytes: number, live: boolean, afterCall: () => Promise<void>): Promise<BigArm> {
  const cap = 64 * MiB;
  const pair = await startPair(flood(bytes), { maxPayload: 256 * MiB, maxCaptureBytes: cap }, { maxCaptureBytes: cap, liveOutput: live });
  try {
    for (let i = 0; i < BIG_WARMUP; i++) await streamMs(pair.server, bytes, live); // warm-up: the same call (V8's heap sizing, the spawn helper, buffers)
    const s0 = (await pair.server.request('memory')).settledKiB as number;
    const h0 = await pair.host.request('memory');
    await Promise.all([pair.server.request('resetPeak'), pair.host.request('resetPeak')]);
    const t = await streamMs(pair.server, bytes, live);
    if (t.captureBytes !== bytes) throw new Error(`big: capture of ${t.captureBytes} bytes, not ${bytes}`);
    const s1 = (await pair.server.request('memory')).self as { peakKiB: number };
    const h1 = await pair.host.request('memory');
    const kib = (m: unknown) => (m as { peakKiB: number }).peakKiB;
    const times = [t.ms];
    await afterCall();
    while (times.length < BIG_CALLS) {
      const next = await streamMs(pair.server, bytes, live);
      if (next.captureBytes !== bytes) throw new Error(`big: capture of ${next.captureBytes} bytes, not ${bytes}`);
      times.push(next.ms);
      await afterCall();
    }
    return {
      ms: median(times),
      callsMs: times,
      captureBytes: t.captureBytes,
      serverKiB: s1.peakKiB - s0,
      hostKiB: kib(h1.self) - (h0.settledKiB as number),
      helperKiB: kib(h1.helper) - (h0.helper as { rssKiB: number }).rssKiB,
    };
  } finally {
    await stopPair(pair);
  }
}

export interface BigResult {
  bytes: number;
  streamed: BigArm;
  buffered: BigArm;
  floorMs: number;
  detachedFloorMs: number;
}

async function big(bytes: number): Promise<BigResult> {
  const { helper: floor } = await Helper.start('live-floor');
  try {
    const command = flood(bytes);
    for (let i = 0; i < BIG_WARMUP; i++) await floorMs(floor, command, false, bytes);
    const floors: number[] = [];
    const detached: number[] = [];
    const afterCall = async (): Promise<void> => {
      floors.push(await floorMs(floor, command, false, bytes));
      detached.push(await floorMs(floor, command, true, bytes));
    };
    const streamed = await bigArm(bytes, true, afterCall);
    const buffered = await bigArm(bytes, false, afterCall);
    return { bytes, streamed, buffered, floorMs: median(floors), detachedFloorMs: median(detached) };
  } finally {
    await floor.stop();
  }
}

export interface BackpressureResult {
  /** Server: peak RSS above its settled RSS while nothing was read / over the whole call, KiB. */
  serverHeldKiB: number;
  serverKiB: number;
  /** Host and its spawn helper: peak RSS above idle until near the end of the held phase, and over the call, KiB. */
  hostHeldKiB: number;
  helperHeldKiB: number;
  hostKiB: number;
  helperKiB: number;
  streamedWhileHeld: number;
  streamed: number;
  exitCode: number;
  captureBytes: number;
  markerTotal: number;
  probeP50Ms: number;
  probeP99Ms: number;
  probes: number;
  /** Baseline latency of the same in-process calls before the flood. */
  idleP50Ms: number;
  idleP99Ms: number;
}

async function backpressure(): Promise<BackpressureResult> {
  const pair = await startPair(flood(1024 * MiB));
  try {
    const idle = (await pair.server.request('load', { concurrency: 1, bytes: 100, count: 150 })).segment as Segment;
    const sortedIdle = Float64Array.from(idle.latencies).sort();
    const h0 = await pair.host.request('memory');
    await pair.host.request('resetPeak');
    const holding = pair.server.request('hold', { holdMs: 3000, readMs: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 2700)); // near the end of the held phase
    const hHeld = await pair.host.request('memory');
    const r = await holding;
    const h1 = await pair.host.request('memory');
    const kib = (m: unknown) => (m as { peakKiB: number }).peakKiB;
    const lat = Float64Array.from(r.latencies as number[]).sort();
    return {
      serverHeldKiB: Number(r.heldPeakKiB) - Number(r.baseKiB),
      serverKiB: Number(r.peakKiB) - Number(r.baseKiB),
      hostHeldKiB: kib(hHeld.self) - (h0.settledKiB as number),
      helperHeldKiB: kib(hHeld.helper) - (h0.helper as { rssKiB: number }).rssKiB,
      hostKiB: kib(h1.self) - (h0.settledKiB as number),
      helperKiB: kib(h1.helper) - (h0.helper as { rssKiB: number }).rssKiB,
      streamedWhileHeld: Number(r.streamedWhileHeld),
      streamed: Number(r.streamed),
      exitCode: Number(r.exitCode),
      captureBytes: Number(r.captureBytes),
      markerTotal: Number(r.markerTotal),
      probeP50Ms: percentile(lat, 0.5),
      probeP99Ms: percentile(lat, 0.99),
      probes: lat.length,
      idleP50Ms: percentile(sortedIdle, 0.5) / 1000,
      idleP99Ms: percentile(sortedIdle, 0.99) / 1000,
    };
  } finally {
    await stopPair(pair);
  }
}

export interface FrameCost {
  jsonEncodeUs: number;
  jsonDecodeUs: number;
  binaryEncodeUs: number;
  binaryDecodeUs: number;
}

function frameCost(n: number): FrameCost {
  const line = 'live output bench: a line of build log text, 0123456789\n';
  const chunk = Buffer.from(line.repeat(Math.ceil(65536 / line.length)).slice(0, 65536));
  const id = 'V1StGXR8_Z5j2bx';
  const cpu = (f: () => void): number => {
    for (let i = 0; i < Math.ceil(n / 10); i++) f();
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) f();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  let text = '';
  let frame: Buffer = Buffer.alloc(0);
  const jsonEncodeUs = cpu(() => {
    text = encodeMessage({ type: 'output', id, stream: 'stdout', seq: 7, data: toWire(chunk).text });
  });
  const jsonDecodeUs = cpu(() => {
    const d = decodeHostMessage(Buffer.from(text));
    if (!d.ok || d.message.type !== 'output') throw new Error('frames: JSON chunk not decoded');
    fromWire(d.message.data, d.message.encoding);
  });
  const binaryEncodeUs = cpu(() => {
    frame = encodeOutputFrame(id, 'stdout', 7, [chunk], chunk.length);
  });
  const binaryDecodeUs = cpu(() => {
    if (!decodeOutputFrame(frame).ok) throw new Error('frames: binary chunk not decoded');
  });
  return { jsonEncodeUs, jsonDecodeUs, binaryEncodeUs, binaryDecodeUs };
}

/** What `live` measured (the arms that ran). Times in ms, sizes in bytes or KiB as named. */
export interface LiveResult {
  throughput?: ThroughputResult;
  ttfb?: { p50Ms: number; p90Ms: number };
  big?: BigResult;
  backpressure?: BackpressureResult;
  frames?: FrameCost;
  cost?: CostResult;
}

/** The arms of `live`, each also selectable alone as `--only live-<arm>`. */
export const LIVE_ARMS = ['throughput', 'ttfb', 'big', 'backpressure', 'frames', 'cost'] as const;
export type LiveArm = (typeof LIVE_ARMS)[number];

/** The live-output arms in `arms` (default: all); `quick`: smaller sizes and fewer repetitions. */
export async function liveScenario(quick: boolean, arms: ReadonlySet<LiveArm> = new Set(LIVE_ARMS)): Promise<LiveResult> {
  const r: LiveResult = {};
  if (arms.has('throughput')) r.throughput = await throughput(quick ? 1 : 3, quick ? 32 * MiB : 200 * MiB);
  if (arms.has('ttfb')) {
    const f = await ttfb(quick ? 10 : 30);
    r.ttfb = { p50Ms: f.p50Ms, p90Ms: f.p90Ms };
  }
  if (arms.has('big')) r.big = await big(quick ? 10_000_000 : 50_000_000);
  if (arms.has('backpressure')) r.backpressure = await backpressure();
  if (arms.has('frames')) r.frames = frameCost(quick ? 300 : 2000);
  if (arms.has('cost')) r.cost = await liveCost(quick ? 3 : 6, quick ? 0.3 : 0.6);
  return r;
}

/** One line per arm that ran, for the console. */
export function liveReport(run: number, l: LiveResult): string {
  const MB = (n: number) => (n / 1024).toFixed(0);
  const lines: string[] = [];
  const t = l.throughput;
  if (t)
    lines.push(
      `run ${run} live throughput: ${t.bytes / MiB} MiB streamed ${t.toolwireMiBps.toFixed(0)} MiB/s; spawn floor ${t.floorMiBps.toFixed(0)} MiB/s (ratio ${t.ratio.toFixed(2)}), detached floor ${t.detachedFloorMiBps.toFixed(0)} MiB/s (ratio ${t.detachedRatio.toFixed(2)}); pairs ${t.pairs.map((x) => (x.floorMs / x.toolwireMs).toFixed(2)).join(' ')}; CPU ms per MiB server ${t.cpuMsPerMiB.server.toFixed(2)}, host ${t.cpuMsPerMiB.host.toFixed(2)}, spawn helper ${t.cpuMsPerMiB.helper.toFixed(2)} (floor's reader ${t.cpuMsPerMiB.floorReader.toFixed(2)})`,
    );
  if (l.ttfb) lines.push(`run ${run} live ttfb: p50 ${l.ttfb.p50Ms.toFixed(2)} ms, p90 ${l.ttfb.p90Ms.toFixed(2)} ms`);
  const b = l.big;
  if (b)
    lines.push(
      `run ${run} live big ${(b.bytes / 1e6).toFixed(0)} MB: streamed ${b.streamed.ms.toFixed(0)} ms (median of ${b.streamed.callsMs.map((ms) => ms.toFixed(0)).join(' ')}; floors ${b.floorMs.toFixed(0)} median) (${(b.streamed.ms / b.floorMs).toFixed(2)} × floor, ${(b.streamed.ms / b.detachedFloorMs).toFixed(2)} × detached), not streamed ${b.buffered.ms.toFixed(0)} ms (${(b.buffered.ms / b.floorMs).toFixed(2)} × floor); ` +
        `peak RSS above idle server/host/helper MiB: streamed ${MB(b.streamed.serverKiB)}/${MB(b.streamed.hostKiB)}/${MB(b.streamed.helperKiB)}, not streamed ${MB(b.buffered.serverKiB)}/${MB(b.buffered.hostKiB)}/${MB(b.buffered.helperKiB)}`,
    );
  const p = l.backpressure;
  if (p)
    lines.push(
      `run ${run} live backpressure 1 GiB: peak RSS above idle while held / over the call: server +${MB(p.serverHeldKiB)} / +${MB(p.serverKiB)} MiB, host +${MB(p.hostHeldKiB)} / +${MB(p.hostKiB)} MiB, spawn helper +${MB(p.helperHeldKiB)} / +${MB(p.helperKiB)} MiB; streamed while held ${(p.streamedWhileHeld / MiB).toFixed(2)} MiB, in all ${(p.streamed / MiB).toFixed(0)} MiB; exit ${p.exitCode}, capture ${p.captureBytes} B, marker total ${p.markerTotal}; other calls p50/p99 ${p.probeP50Ms.toFixed(1)}/${p.probeP99Ms.toFixed(1)} ms (idle ${p.idleP50Ms.toFixed(1)}/${p.idleP99Ms.toFixed(1)}), ${p.probes} calls`,
    );
  if (l.frames)
    lines.push(
      `run ${run} live frames, CPU µs per 64 KiB chunk of log text: JSON encode ${l.frames.jsonEncodeUs.toFixed(0)} + decode ${l.frames.jsonDecodeUs.toFixed(0)}, binary encode ${l.frames.binaryEncodeUs.toFixed(0)} + decode ${l.frames.binaryDecodeUs.toFixed(0)}`,
    );
  if (l.cost) lines.push(liveCostReport(run, l.cost));
  return lines.join('\n');
}
