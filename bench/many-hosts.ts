/**
 * s6: one server, the echo host `h0`, then `hosts − 1` more hosts spread over several processes,
 * 10 tools each. Measures the server's RSS per connected host and the s1 latency to the echo host
 * with one host connected and with all of them.
 *
 * - RSS per host is `(RSS with N hosts − RSS with 1 host) / (N − 1)`, both read after a full GC and
 *   after the one-host s1 run, so the V8 heap has the same warm shape in both readings. The textbook
 *   `(RSS with N − RSS with 0) / N`, whose "0" is the fresh process, is recorded too.
 * - Latency runs A–B–A: half the calls with one host, all calls with N hosts, the other half with
 *   one host again after the others left; "one host" merges both halves, so drift cancels.
 */
import { execFileSync } from 'node:child_process';
import { type Arm, segment, segmentsFor, TOOLS_PER_HOST } from './arms.js';
import { Helper } from './helpers.js';
import { type LoadStats, type Segment, summarize } from './load.js';
import type { LoadShape, Plan } from './scenarios.js';

export interface ManyHostsResult {
  hosts: number;
  hostProcesses: number;
  rss0KiB: number;
  rssOneKiB: number;
  rssAllKiB: number;
  /** (rssAll − rssOne) / (hosts − 1). */
  perHostKiB: number;
  /** (rssAll − rss0) / hosts. */
  perHostNaiveKiB: number;
  connectSeconds: number;
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

export async function manyHosts(plan: Plan['s6']): Promise<ManyHostsResult> {
  const limit = fdLimit();
  if (!(limit > plan.hosts + 100)) {
    throw new Error(`s6 needs ${plan.hosts + 100} file descriptors in the server process; ulimit -n is ${limit}`);
  }
  const perProcess = Math.ceil((plan.hosts - 1) / plan.hostProcesses);
  const { helper: server, ready } = await Helper.start('toolwire-server', { BENCH_HOSTS: String(plan.hosts) });
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

    const t0 = Date.now();
    const spawns: Promise<{ helper: Helper }>[] = [];
    for (let first = 1; first < plan.hosts; first += perProcess) {
      const count = Math.min(perProcess, plan.hosts - first);
      spawns.push(Helper.start('toolwire-host', { BENCH_URL: url, BENCH_FIRST: String(first), BENCH_COUNT: String(count) }, 300_000));
    }
    const started = await Promise.allSettled(spawns);
    loadHosts = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value.helper] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    await server.request('wait', { hosts: plan.hosts, tools: plan.hosts * TOOLS_PER_HOST, timeoutMs: 300_000 });
    const connectSeconds = (Date.now() - t0) / 1000;
    // Let the connect storm's after-work (advertise replies, GC, JIT in the host processes) end:
    // the latency wanted is that of N hosts connected, not of N hosts connecting.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const rssAllKiB = Number((await server.request('rss')).rssKiB);
    const all = summarize(await run(arm, shape, shape.count));
    const s = await server.request('info');

    await Promise.all(loadHosts.map((h) => h.stop()));
    loadHosts = [];
    await server.request('wait', { hosts: 1, tools: TOOLS_PER_HOST, exact: true });
    const oneB = await run(arm, shape, Math.floor(shape.count / 2));
    const h = await echo.request('info');
    return {
      hosts: plan.hosts,
      hostProcesses: spawns.length,
      rss0KiB,
      rssOneKiB,
      rssAllKiB,
      perHostKiB: (rssAllKiB - rssOneKiB) / (plan.hosts - 1),
      perHostNaiveKiB: (rssAllKiB - rss0KiB) / plan.hosts,
      connectSeconds,
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
