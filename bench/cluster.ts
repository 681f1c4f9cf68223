/**
 * Issue 17 in `pnpm bench --only cluster`: a call routed across two server nodes (caller on node B,
 * host on node A, over a real `nats-server`) against the same call on node A, side by side in one
 * run, at c=1 and c=64 (`route()`, 100 B echo). Needs `nats-server` (Debian's package).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Arm, type ArmResult, compare, TOOLS_PER_HOST } from './arms.js';
import { cpuFor, Helper, type Placement, repoRoot } from './helpers.js';
import type { LoadShape } from './scenarios.js';

export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => existsSync(p));

/**
 * Where the cluster scenario's processes run when server roles are pinned (`BENCH_CLUSTER_PIN`):
 * - `apart` (the default): node B (the caller's node, with the load) on the server CPU, node A on
 *   the other CPU; nats-server and the host unpinned. Each node has a CPU of its own, as nodes on
 *   separate machines do, and the same-node arm keeps one node and its host on separate CPUs.
 * - `shared`: every server role on the server CPU (both nodes on one CPU; before session 10).
 * - `a-with-host`: node B on the server CPU; node A, nats-server and the host on the other CPU.
 * The NATS floor's caller is placed as node B, its answerer as node A.
 */
export type ClusterPin = 'apart' | 'shared' | 'a-with-host';

/** The arrangement `BENCH_CLUSTER_PIN` names (default `apart`). */
export function clusterPin(): ClusterPin {
  const pin = process.env.BENCH_CLUSTER_PIN ?? 'apart';
  if (pin !== 'apart' && pin !== 'shared' && pin !== 'a-with-host') throw new Error(`BENCH_CLUSTER_PIN: apart, shared or a-with-host, not ${pin}`);
  return pin;
}

export interface ClusterBench {
  /** How the processes were placed ({@link ClusterPin}). */
  pin: ClusterPin;
  /** Per shape: the call on node A, the call from node B, and the NATS floor (`proc/nats-echo-server.ts`: B's hops without toolwire or the host). */
  shapes: { same: ArmResult; cross: ArmResult; floor: ArmResult }[];
}

/**
 * Go scheduler threads nats-server runs with (`GOMAXPROCS`): `BENCH_NATS_PROCS`, default 1. On this
 * bench's two vCPUs, shared by four busy processes, a nats-server left to use both spins looking for
 * work after each wake-up and takes CPU from the nodes (bench/README.md, "Session 17"); in a real
 * cluster it has machines of its own. `BENCH_NATS_PROCS=0` leaves Go's default (one per CPU).
 */
const NATS_PROCS = process.env.BENCH_NATS_PROCS ?? '1';

/** A nats-server with JetStream on a random port (on CPU `cpu` when given); resolves with its URL, pid and a stop. */
export async function startNats(cpu?: string): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  if (NATS_SERVER === undefined) throw new Error('the cluster scenario needs nats-server (apt-get install -y nats-server)');
  const store = await mkdtemp(join(tmpdir(), 'toolwire-bench-nats-'));
  const args = ['-a', '127.0.0.1', '-p', '-1', '-js', '-sd', store];
  const env = NATS_PROCS === '0' ? process.env : { ...process.env, GOMAXPROCS: NATS_PROCS };
  const child: ChildProcess =
    cpu === undefined
      ? spawn(NATS_SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'], env })
      : spawn('taskset', ['-c', cpu, NATS_SERVER, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env });
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      log += d;
      const m = /Listening for client connections on [^\s]+:(\d+)[\s\S]*Server is ready/.exec(log);
      if (m) resolve(`nats://127.0.0.1:${m[1]}`);
    });
    child.once('exit', () => reject(new Error(`nats-server exited: ${log}`)));
  });
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
      await rm(store, { recursive: true, force: true });
    },
  };
}

export async function clusterScenario(shapes: LoadShape[]): Promise<ClusterBench> {
  const pin = clusterPin();
  // Node A's side (node A, the floor's answerer), and nats-server's and the host's placement.
  const aSide: Placement = pin === 'shared' ? 'server' : 'other';
  const rest: Placement = pin === 'a-with-host' ? 'other' : 'free';
  const nats = await startNats(cpuFor('nats-server', rest));
  const helpers: Helper[] = [];
  try {
    const a = await Helper.start('toolwire-server', { BENCH_NATS: nats.url, BENCH_NODE: 'a' }, undefined, false, aSide);
    helpers.push(a.helper);
    const b = await Helper.start('toolwire-server', { BENCH_NATS: nats.url, BENCH_NODE: 'b' });
    helpers.push(b.helper);
    const host = (await Helper.start('toolwire-host', { BENCH_URL: String(a.ready.url) }, undefined, false, rest)).helper;
    helpers.push(host);
    const answer = (await Helper.start('nats-echo-server', { BENCH_NATS: nats.url, BENCH_NATS_ROLE: 'answer' }, undefined, false, aSide)).helper;
    helpers.push(answer);
    const caller = (await Helper.start('nats-echo-server', { BENCH_NATS: nats.url, BENCH_NATS_ROLE: 'call' })).helper;
    helpers.push(caller);
    await a.helper.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    await b.helper.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    const load = { name: 'h0__echo', path: 'route' };
    const watch = { a: a.helper.pid!, b: b.helper.pid!, nats: nats.pid };
    const same: Arm = { name: 'toolwire', server: a.helper, host, load, watch };
    const cross: Arm = { name: 'toolwire', server: b.helper, host, load, watch };
    const floor: Arm = { name: 'nats-floor', server: caller, load: {}, watch: { a: answer.pid!, b: caller.pid!, nats: nats.pid } };
    const out: ClusterBench['shapes'] = [];
    for (const shape of shapes) {
      const [s, c, f] = await compare([same, cross, floor], shape);
      out.push({ same: s!, cross: c!, floor: f! });
    }
    return { pin, shapes: out };
  } finally {
    for (const h of helpers.reverse()) await h.stop();
    await nats.stop();
  }
}

/** Median of the per-segment ratios of `a` to `b` (calls/s). */
export function segmentRatio(a: ArmResult, b: ArmResult): number {
  const r = a.segmentRates.map((x, i) => x / b.segmentRates[i]!).sort((x, y) => x - y);
  return r[Math.floor(r.length / 2)]!;
}

export interface ClusterScale {
  nodes: number;
  hostsPerNode: number;
  /** Seconds from the last host connected (every host process ready) until every node lists every tool. */
  convergeSeconds: number;
  /** Per node: RSS growth after GC from 1 host per node to all, KiB, per host of the cluster and per host connected to it. */
  rss: { node: string; perClusterHostKiB: number; perLocalHostKiB: number }[];
  /** Per node: V8 heap used growth after GC from 1 host per node to all, KiB per host of the cluster (the rest of the RSS growth is outside the JS heap). */
  heap: { node: string; perClusterHostKiB: number }[];
  /**
   * Per node: RSS growth less the growth of the V8 heap committed but unused after GC (`heapTotal −
   * heapUsed`: the young generation grown in the connect storm, old-space pages kept), KiB per host
   * of the cluster — what the hosts hold, without the slack V8 keeps for the next allocations.
   */
  rssLessHeapSlack: { node: string; perClusterHostKiB: number }[];
  /** Per node: `process.memoryUsage()` after GC (KiB) with one host per node and with all, for where the RSS is. */
  memory: { node: string; few: Record<string, unknown>; all: Record<string, unknown> }[];
  /** Per node: CPU seconds (user + system) from before the host processes start until every node lists every tool. */
  stormCpuSeconds: { node: string; seconds: number }[];
  /** Where the nodes' packages were loaded from: `dist` (built, as installed, as s6 measures; the default) or `src` (tsx, `BENCH_CLUSTER_SOURCE=1`). */
  serverCode: 'dist' | 'src';
  /** Cross-node s1 (node b → host h0 on node a) with one host per node, and with all. */
  few: ArmResult;
  all: ArmResult;
}

/**
 * `pnpm bench --only cluster-scale`: 3 nodes × `hostsPerNode` hosts (10 tools each) on one NATS:
 * how long until every node's `tools()` is complete, RSS per host on each node, and cross-node s1
 * latency with all hosts against one host per node.
 */
export async function clusterScale(hostsPerNode: number, shape: LoadShape, processesPerNode = 2): Promise<ClusterScale> {
  const nats = await startNats();
  const helpers: Helper[] = [];
  const total = 3 * hostsPerNode;
  // The nodes as installed, from `dist/` (as s6 runs its single node, so RSS per host compares like
  // for like): from `src/`, tsx's keepNames gives each named closure of a session its own property
  // dictionary (~2.5 KiB per local host).
  const built = process.env.BENCH_CLUSTER_SOURCE !== '1';
  if (built) execFileSync('pnpm', ['--filter', '@toolwire/server...', 'build'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  // BENCH_CLUSTER_PROF=DIR: CPU profiles of nodes a and b over each s1 run (DIR/{few,all}-{a,b}.cpuprofile).
  const profDir = process.env.BENCH_CLUSTER_PROF;
  const profiled = async <T>(label: string, nodes: Helper[], run: () => Promise<T>): Promise<T> => {
    if (profDir === undefined) return run();
    for (const n of nodes) await n.request('profile', { action: 'start' });
    const out = await run();
    for (const [k, n] of nodes.entries()) await n.request('profile', { action: 'stop', file: join(profDir, `${label}-${'ab'[k]}.cpuprofile`) });
    return out;
  };
  try {
    const env = (node: string) => ({ BENCH_NATS: nats.url, BENCH_NODE: node, BENCH_HOSTS: String(total) });
    const nodes = await Promise.all(['a', 'b', 'c'].map((n) => Helper.start('toolwire-server', env(n), 120_000, built)));
    helpers.push(...nodes.map((n) => n.helper));
    // One host per node first: h0 (the echo target) on a, h1 on b, h2 on c.
    for (let i = 0; i < 3; i++) helpers.push((await Helper.start('toolwire-host', { BENCH_URL: String(nodes[i]!.ready.url), BENCH_FIRST: String(i) })).helper);
    for (const n of nodes) await n.helper.request('wait', { hosts: 3, tools: 3 * TOOLS_PER_HOST, timeoutMs: 60_000 });
    const cross: Arm = { name: 'toolwire', server: nodes[1]!.helper, host: helpers[3]!, load: { name: 'h0__echo', path: 'route' } };
    const ab = [nodes[0]!.helper, nodes[1]!.helper];
    const few = (await profiled('few', ab, () => compare([cross], shape)))[0]!;
    const memFew = await Promise.all(nodes.map((n) => n.helper.request('mem')));
    const rssFew = memFew.map((m) => Number(m.rssKiB));

    // BENCH_CLUSTER_HEAP=DIR: a sampling heap profile of each node over the connect storm, up to the
    // RSS reading (DIR/storm-{a,b,c}.heapprofile); with BENCH_CLUSTER_HEAP_MAJOR=1 it also keeps the
    // objects later collected by a full GC: what outlived the young generation and died in old space
    // (the fragmentation of the RSS reading), against the live objects of a run without it.
    const heapDir = process.env.BENCH_CLUSTER_HEAP;
    const major = process.env.BENCH_CLUSTER_HEAP_MAJOR === '1';
    if (heapDir !== undefined) for (const n of nodes) await n.helper.request('heapSample', { action: 'start', major });
    const cpuBefore = await Promise.all(nodes.map(async (n) => Number((await n.helper.request('info')).cpuUs)));
    // The rest: hosts 3 … total−1, spread over the nodes, `processesPerNode` host processes each.
    const spawns: Promise<{ helper: Helper }>[] = [];
    const rest = hostsPerNode - 1;
    const per = Math.ceil(rest / processesPerNode);
    nodes.forEach((n, k) => {
      for (let done = 0; done < rest; done += per) {
        const count = Math.min(per, rest - done);
        // Node k's hosts: identities 3 + k·rest + done …
        spawns.push(
          Helper.start('toolwire-host', { BENCH_URL: String(n.ready.url), BENCH_FIRST: String(3 + k * rest + done), BENCH_COUNT: String(count) }, 600_000),
        );
      }
    });
    const started = await Promise.allSettled(spawns);
    for (const s of started) if (s.status === 'fulfilled') helpers.push(s.value.helper);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    const t0 = Date.now();
    // Looking every 100 ms: each look at a changed list builds its 90,000 entries (the measurement's own cost).
    await Promise.all(nodes.map((n) => n.helper.request('wait', { hosts: total, tools: total * TOOLS_PER_HOST, timeoutMs: 600_000, pollMs: 100 })));
    const convergeSeconds = (Date.now() - t0) / 1000;
    const cpuAfter = await Promise.all(nodes.map(async (n) => Number((await n.helper.request('info')).cpuUs)));
    // As s6 does (it holds its hosts 3 × heartbeat before it measures): the server's decode and
    // compile workers, each with an isolate of its own (tens of MiB), end after their idle time;
    // measured while one lives, a node's RSS per host carries it. Wait (bounded) until every node
    // has no more threads than with one host per node.
    const threadsFew = memFew.map((m) => Number(m.threads));
    let memAll = await Promise.all(nodes.map((n) => n.helper.request('mem')));
    for (const until = Date.now() + 30_000; memAll.some((m, k) => Number(m.threads) > threadsFew[k]!) && Date.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      memAll = await Promise.all(nodes.map((n) => n.helper.request('mem')));
    }
    const rssAll = memAll.map((m) => Number(m.rssKiB));
    if (heapDir !== undefined) {
      for (const [k, n] of nodes.entries()) await n.helper.request('heapSample', { action: 'stop', file: join(heapDir, `storm-${'abc'[k]}.heapprofile`) });
    }
    // Settled again before the s1 run (a node dropped and re-fetched meanwhile would fail its calls 69).
    await Promise.all(nodes.map((n) => n.helper.request('wait', { hosts: total, tools: total * TOOLS_PER_HOST, timeoutMs: 600_000, pollMs: 100 })));
    const all = (await profiled('all', ab, () => compare([cross], shape)))[0]!;
    return {
      nodes: 3,
      hostsPerNode,
      convergeSeconds,
      rss: ['a', 'b', 'c'].map((node, k) => ({
        node,
        perClusterHostKiB: (rssAll[k]! - rssFew[k]!) / (total - 3),
        perLocalHostKiB: (rssAll[k]! - rssFew[k]!) / (hostsPerNode - 1),
      })),
      heap: ['a', 'b', 'c'].map((node, k) => ({ node, perClusterHostKiB: (Number(memAll[k]!.heapUsedKiB) - Number(memFew[k]!.heapUsedKiB)) / (total - 3) })),
      rssLessHeapSlack: ['a', 'b', 'c'].map((node, k) => {
        const slack = (m: Record<string, unknown>): number => Number(m.heapTotalKiB) - Number(m.heapUsedKiB);
        return { node, perClusterHostKiB: (rssAll[k]! - rssFew[k]! - (slack(memAll[k]!) - slack(memFew[k]!))) / (total - 3) };
      }),
      memory: ['a', 'b', 'c'].map((node, k) => ({ node, few: memFew[k]!, all: memAll[k]! })),
      stormCpuSeconds: ['a', 'b', 'c'].map((node, k) => ({ node, seconds: (cpuAfter[k]! - cpuBefore[k]!) / 1e6 })),
      serverCode: built ? 'dist' : 'src',
      few,
      all,
    };
  } finally {
    for (const h of helpers.reverse()) await h.stop();
    await nats.stop();
  }
}
