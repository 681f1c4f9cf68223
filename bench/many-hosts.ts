/**
 * s6: one server configured with `hosts` host and `callers` caller identities; the echo host `h0`,
 * then `hosts − 1` more hosts spread over several processes, 10 tools each, connected in two waves
 * (the first `firstWave` hosts, then the rest). Measures the server's RSS per connected host, how
 * long each wave takes to connect and advertise, the s1 latency to the echo host with one host
 * connected and with all of them, and whether every host stays connected over 3 heartbeat
 * intervals.
 *
 * - The server runs the built packages (`dist/`, as installed; built first), the host processes
 *   are light (`proc/fleet-host.ts`).
 * - The host processes start first and dial on command, so the connect times are those of the
 *   connect storm, not of starting node processes.
 * - RSS per host is `(RSS with N hosts − RSS with 1 host) / (N − 1)`, both read after a full GC and
 *   after the one-host s1 run, so the V8 heap has the same warm shape in both readings. The textbook
 *   `(RSS with N − RSS with 0) / N`, whose "0" is the fresh process, is recorded too.
 * - Latency runs A–B–A: half the calls with one host, all calls with N hosts, the other half with
 *   one host again after the others left; "one host" merges both halves, so drift cancels.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type Arm, segment, segmentsFor, TOOLS_PER_HOST } from './arms.js';
import { buildServerOnce, Helper } from './helpers.js';
import { type LoadStats, type Segment, summarize } from './load.js';
import type { LoadShape, Plan } from './scenarios.js';

export interface ManyHostsResult {
  hosts: number;
  hostProcesses: number;
  /** Where the server's packages were loaded from: `dist` (built, as installed; the default) or `src` (through tsx, `BENCH_S6_SOURCE=1`). */
  serverCode: 'dist' | 'src';
  /** Identities the server was configured with (host, caller). */
  identities: { hosts: number; callers: number };
  heartbeatMs: number;
  rss0KiB: number;
  rssOneKiB: number;
  rssAllKiB: number;
  /** (rssAll − rssOne) / (hosts − 1). */
  perHostKiB: number;
  /** (rssAll − rss0) / hosts. */
  perHostNaiveKiB: number;
  /** Hosts in the first wave, and how long they took to connect and advertise, s. */
  firstWave: number;
  firstWaveSeconds: number;
  /** All hosts, from the first wave's command to the last host advertised, s. */
  connectSeconds: number;
  /** CPU time of the server process while the hosts connected and advertised, s. */
  connectServerCpuSeconds: number;
  /** CPU time of the host processes (the load generator) over the same span, s, all of them together. */
  connectHostCpuSeconds: number;
  /** Hosts the server no longer had, or whose connection closed, over 3 heartbeat intervals after all connected. */
  lostHosts: number;
  /** How long the hosts were held connected before `lostHosts` was read, s. */
  heldSeconds: number;
  one: LoadStats;
  all: LoadStats;
  serverPeakRssKiB: number;
  bufferutil: { server: boolean; host: boolean };
}

/** The soft fd limit of processes started from here (`ulimit -n`). */
export function fdLimit(): number {
  try {
    return Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  } catch {
    return Number.NaN;
  }
}

/** Pause after every host is connected, before measuring, ms. */
const SETTLE_MS = 1_000;

async function run(arm: Arm, shape: LoadShape, count: number): Promise<Segment[]> {
  const n = Math.max(1, Math.round((segmentsFor(shape) * count) / shape.count));
  const out: Segment[] = [];
  for (let k = 0; k < n; k++) out.push((await segment(arm, shape, Math.floor(count / n) + (k < count % n ? 1 : 0))).segment);
  return out;
}

/** Start host processes for hosts `first … first + count − 1`, `processes` of them, idle until `connect`. */
function startHosts(url: string, first: number, count: number, processes: number): Promise<{ helper: Helper }>[] {
  const perProcess = Math.ceil(count / processes);
  const out: Promise<{ helper: Helper }>[] = [];
  for (let k = first; k < first + count; k += perProcess) {
    const env = {
      BENCH_URL: url,
      BENCH_FIRST: String(k),
      BENCH_COUNT: String(Math.min(perProcess, first + count - k)),
      BENCH_CONNECT: 'command',
      BENCH_SOURCE_ADDRESS: `127.0.0.${2 + out.length + (first === 1 ? 0 : 100)}`,
    };
    // The fleet's hosts are light (`fleet-host.ts`: why); BENCH_S6_REAL_HOSTS=1 runs `ToolHost`s instead.
    out.push(Helper.start(process.env.BENCH_S6_REAL_HOSTS === '1' ? 'toolwire-host' : 'fleet-host', env, 300_000));
  }
  return out;
}

/**
 * `plan` with `BENCH_S6_HOSTS` / `BENCH_S6_FIRST_WAVE` / `BENCH_S6_HOST_PROCESSES` / `BENCH_S6_HEARTBEAT_MS` applied when set
 * (a smaller fleet while profiling, e.g. `BENCH_S6_HOSTS=2000`).
 */
function fromEnv(plan: Plan['s6']): Plan['s6'] {
  const n = (name: string, fallback: number): number => (process.env[name] === undefined ? fallback : Number(process.env[name]));
  const hosts = n('BENCH_S6_HOSTS', plan.hosts);
  return {
    ...plan,
    hosts,
    firstWave: n('BENCH_S6_FIRST_WAVE', process.env.BENCH_S6_HOSTS === undefined ? plan.firstWave : Math.ceil(hosts / 2)),
    hostProcesses: n('BENCH_S6_HOST_PROCESSES', plan.hostProcesses),
    heartbeatMs: n('BENCH_S6_HEARTBEAT_MS', plan.heartbeatMs),
  };
}

/** CPU of every helper in `helpers` together (user + system), µs. */
async function cpuOf(helpers: readonly Helper[]): Promise<number> {
  return (await Promise.all(helpers.map((h) => h.request('info')))).reduce((sum, i) => sum + Number(i.cpuUs), 0);
}

/** User and system CPU of the processes `pids` together, s (`/proc/<pid>/stat`, 10 ms ticks). */
function userSys(pids: readonly (number | undefined)[]): { user: number; sys: number } {
  let user = 0;
  let sys = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      user += Number(fields[11]) / 100;
      sys += Number(fields[12]) / 100;
    } catch {
      // gone
    }
  }
  return { user, sys };
}

export async function manyHosts(planned: Plan['s6']): Promise<ManyHostsResult> {
  const plan = fromEnv(planned);
  const limit = fdLimit();
  if (!(limit > plan.hosts + 100)) {
    throw new Error(`s6 needs ${plan.hosts + 100} file descriptors in the server process; ulimit -n is ${limit} (bench/README.md, s6)`);
  }
  const env = { BENCH_HOSTS: String(plan.hosts), BENCH_CALLERS: String(plan.callers), BENCH_HEARTBEAT_MS: String(plan.heartbeatMs) };
  // The server as installed: from `dist/`, built now (a `dist/` left from an earlier checkout would
  // measure old code). From `src/`, tsx's keepNames adds ~2.6 KiB per host (a property dictionary
  // on each named closure of a session), which the built server does not have.
  const built = process.env.BENCH_S6_SOURCE !== '1';
  if (built) buildServerOnce();
  const { helper: server, ready } = await Helper.start('toolwire-server', env, 120_000, built);
  const url = String(ready.url);
  let loadHosts: Helper[] = [];
  let echo: Helper | undefined;
  try {
    const rss0KiB = Number((await server.request('rss')).rssKiB);
    echo = (await Helper.start('toolwire-host', { BENCH_URL: url })).helper;
    await server.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    const arm: Arm = { name: 'toolwire', server, host: echo, load: { name: 'h0__echo', path: 'route' } };
    const shape = plan.load;
    if (shape.warmup > 0) await segment(arm, shape, shape.warmup);
    const oneA = await run(arm, shape, Math.ceil(shape.count / 2));
    const rssOneKiB = Number((await server.request('rss')).rssKiB);
    const memOne = await server.request('mem');

    // Two waves of host processes, started (idle) before the clock starts.
    const firstWave = Math.min(plan.firstWave, plan.hosts - 1);
    const half = Math.max(1, Math.floor(plan.hostProcesses / 2));
    const waves = [startHosts(url, 1, firstWave, half), startHosts(url, 1 + firstWave, plan.hosts - 1 - firstWave, plan.hostProcesses - half)];
    const started = await Promise.allSettled(waves.flat());
    loadHosts = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value.helper] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    const wave1 = loadHosts.slice(0, waves[0]!.length);
    const wave2 = loadHosts.slice(waves[0]!.length);

    // BENCH_PROFILE_CONNECT=FILE: a CPU profile of the server over the connect storm.
    const profileFile = process.env.BENCH_PROFILE_CONNECT;
    if (profileFile) await server.request('profile', { action: 'start' });
    const serverCpu0 = Number((await server.request('info')).cpuUs);
    const hostCpu0 = await cpuOf(loadHosts);
    const split0 = [userSys([server.pid]), userSys(loadHosts.map((h) => h.pid))];
    const t0 = Date.now();
    await Promise.all(wave1.map((h) => h.request('connect')));
    await server.request('wait', { hosts: 1 + firstWave, tools: (1 + firstWave) * TOOLS_PER_HOST, timeoutMs: 300_000 });
    const firstWaveSeconds = (Date.now() - t0) / 1000;
    await Promise.all(wave2.map((h) => h.request('connect')));
    await server.request('wait', { hosts: plan.hosts, tools: plan.hosts * TOOLS_PER_HOST, timeoutMs: 300_000 });
    const connectedAt = Date.now();
    const connectSeconds = (connectedAt - t0) / 1000;
    const connectServerCpuSeconds = (Number((await server.request('info')).cpuUs) - serverCpu0) / 1e6;
    const connectHostCpuSeconds = ((await cpuOf(loadHosts)) - hostCpu0) / 1e6;
    const split1 = [userSys([server.pid]), userSys(loadHosts.map((h) => h.pid))];
    const us = (k: number): string => `user ${(split1[k]!.user - split0[k]!.user).toFixed(1)} s + sys ${(split1[k]!.sys - split0[k]!.sys).toFixed(1)} s`;
    console.error(`s6: server ${us(0)}; host processes ${us(1)}`);
    console.error(
      `s6: ${plan.hosts} hosts connected in ${connectSeconds.toFixed(1)} s (first ${firstWave} in ${firstWaveSeconds.toFixed(1)} s); ` +
        `CPU server ${connectServerCpuSeconds.toFixed(1)} s, host processes ${connectHostCpuSeconds.toFixed(1)} s`,
    );
    if (profileFile) await server.request('profile', { action: 'stop', file: profileFile });
    // Let the connect storm's after-work (advertise replies, GC, JIT in the host processes) end:
    // the latency wanted is that of N hosts connected, not of N hosts connecting.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const rssAllKiB = Number((await server.request('rss')).rssKiB);
    const memAll = await server.request('mem');
    const perHost = (k: string): string => ((Number(memAll[k]) - Number(memOne[k])) / (plan.hosts - 1)).toFixed(2);
    console.error(
      `s6: per host KiB: rss ${perHost('rssKiB')}, heap used ${perHost('heapUsedKiB')}, heap total ${perHost('heapTotalKiB')}, external ${perHost('externalKiB')}, array buffers ${perHost('arrayBuffersKiB')}`,
    );
    if (process.env.BENCH_S6_HEAP_SNAPSHOT) await server.request('heapSnapshot', { file: process.env.BENCH_S6_HEAP_SNAPSHOT });
    const all = summarize(await run(arm, shape, shape.count));
    const s = await server.request('info');

    // Hold every host for 3 heartbeat intervals (the server pings each one every interval; a host
    // that misses a pong is terminated), then count the hosts the server still has and the
    // connections the host processes saw close.
    const holdUntil = connectedAt + 3 * plan.heartbeatMs + 500;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, holdUntil - Date.now())));
    const heldSeconds = (Date.now() - connectedAt) / 1000;
    const present = Number((await server.request('count')).hosts);
    const closed = (await Promise.all([echo, ...loadHosts].map((h) => h.request('info')))).reduce((n, i) => n + Number(i.lost), 0);
    const lostHosts = Math.max(plan.hosts - present, closed);

    await Promise.all(loadHosts.map((h) => h.stop()));
    loadHosts = [];
    await server.request('wait', { hosts: 1, tools: TOOLS_PER_HOST, exact: true, timeoutMs: 120_000 });
    const oneB = await run(arm, shape, Math.floor(shape.count / 2));
    const h = await echo.request('info');
    return {
      hosts: plan.hosts,
      hostProcesses: waves[0]!.length + waves[1]!.length,
      serverCode: built ? 'dist' : 'src',
      identities: { hosts: plan.hosts, callers: plan.callers },
      heartbeatMs: plan.heartbeatMs,
      rss0KiB,
      rssOneKiB,
      rssAllKiB,
      perHostKiB: (rssAllKiB - rssOneKiB) / (plan.hosts - 1),
      perHostNaiveKiB: (rssAllKiB - rss0KiB) / plan.hosts,
      firstWave,
      firstWaveSeconds,
      connectSeconds,
      connectServerCpuSeconds,
      connectHostCpuSeconds,
      lostHosts,
      heldSeconds,
      one: summarize([...oneA, ...oneB]),
      all,
      serverPeakRssKiB: Number(s.peakRssKiB),
      bufferutil: { server: Boolean(s.bufferutil), host: Boolean(h.bufferutil) },
    };
  } finally {
    await Promise.all(loadHosts.map((h) => h.stop()));
    await echo?.stop();
    await server.stop();
  }
}
