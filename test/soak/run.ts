/**
 * `pnpm soak` — issue 3 §9: a bounded soak of the fault behaviour (DESIGN §6). One server (in this
 * process, on 127.0.0.1), several real tool-host processes, misbehaving in-process hosts and raw
 * junk connections, and concurrent callers with random deadlines and stops, while hosts are
 * randomly SIGKILLed, SIGSTOPped/SIGCONTed and restarted. At the end it prints calls issued, settled
 * by exit code, unsettled, leaked processes and server RSS, and exits 1 if anything stayed unsettled
 * or any process outlived the run. Alongside (issue 11, unless `--no-attacks`): a storm host
 * (advertises of novel schemas), a slowloris client, and a burst server against a host of its own
 * (`attacks/soak-attacks.ts`); the report adds what they did, the worst event-loop stall of the
 * server's process and its RSS before and after (after a GC).
 *
 * Usage: pnpm soak [--seconds 120] [--hosts 4] [--callers 16] [--garbage 3] [--seed N] [--no-attacks]
 *
 * `pnpm soak --cluster 3 [--nats 3] [--seconds 120] [--hosts 6] [--callers 12] [--seed N]`: the
 * cluster soak instead (issue 17, `cluster.ts`): 3 `toolwire serve` nodes on real nats-servers with
 * random node, host and NATS kills.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ToolwireServer } from '@toolwire/server';
import { GarbageHost, rawJunk } from './garbage.js';
import { killProcesses, markedProcesses } from './procs.js';
import { attackFailed, describeAttacks, runSoakAttacks, type SoakAttackReport } from './attacks/soak-attacks.js';
import { SOURCE_NODE_ARGS } from '../source-node.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    hosts: { type: 'string', default: '4' },
    callers: { type: 'string', default: '16' },
    garbage: { type: 'string', default: '3' },
    seed: { type: 'string' },
    'no-attacks': { type: 'boolean' },
    cluster: { type: 'string' },
    nats: { type: 'string', default: '3' },
  },
});
const ATTACKS = args['no-attacks'] !== true;
const SECONDS = Number(args.seconds);
const HOSTS = Number(args.hosts);
const CALLERS = Number(args.callers);
const GARBAGE = Number(args.garbage);
for (const [k, v] of Object.entries({ SECONDS, HOSTS, CALLERS, GARBAGE })) {
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`--${k.toLowerCase()} must be a non-negative number`);
}

// A small seeded PRNG (mulberry32) so a failing run can be repeated with --seed.
let seed = args.seed !== undefined ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
const random = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const firstSeed = seed;

if (args.cluster !== undefined) {
  const NODES = Number(args.cluster);
  const NATS = Number(args.nats);
  if (!Number.isInteger(NODES) || NODES < 2) throw new RangeError('--cluster must be an integer >= 2 (nodes)');
  if (NATS !== 1 && NATS !== 3) throw new RangeError('--nats must be 1 or 3');
  const { clusterSoak } = await import('./cluster.js');
  const dir = mkdtempSync(join(tmpdir(), 'toolwire-soak-cluster-'));
  const code = await clusterSoak({
    nodes: NODES,
    natsServers: NATS,
    seconds: SECONDS,
    hosts: process.argv.includes('--hosts') ? HOSTS : 6,
    callers: process.argv.includes('--callers') ? CALLERS : 12,
    random,
    seed: firstSeed,
    repoRoot: join(dirname(fileURLToPath(import.meta.url)), '..', '..'),
    runId: `${process.pid}-${Date.now()}`,
    dir,
  });
  if (code === 0) rmSync(dir, { recursive: true, force: true });
  else console.log(`  logs:                       ${dir}`);
  process.exit(code);
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURE_HOST = join(repoRoot, 'test', 'adversarial', 'fixtures', 'host.ts');
const RUN_ID = `${process.pid}-${Date.now()}`;
const PIDDIR = mkdtempSync(join(tmpdir(), 'toolwire-soak-'));
const HEARTBEAT_MS = 500;
const DEADLINE_MS = 5_000;
const GRACE_MS = 1_000;
const MAX_PAYLOAD = 1024 * 1024;

const token = (name: string) => `soak-token-${name}-${RUN_ID}-0123456789`;
const hostNames = Array.from({ length: HOSTS }, (_, i) => `h${i}`);
const garbageNames = Array.from({ length: GARBAGE }, (_, i) => `g${i}`);
const STORM = 'storm';

const server = new ToolwireServer({
  hosts: [...hostNames, ...garbageNames, STORM].map((name) => ({ name, token: token(name) })),
  heartbeatMs: HEARTBEAT_MS,
  deadlineMs: DEADLINE_MS,
  cancelGraceMs: GRACE_MS,
  maxPayload: MAX_PAYLOAD,
  maxConnectionsPerHost: 16,
});
const { url, port } = await server.listen(0, '127.0.0.1');
globalThis.gc?.();
const rssStart = process.memoryUsage().rss;
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let rssPeak = rssStart;

// ---- tool-host processes ------------------------------------------------------------------------

interface Host {
  name: string;
  child?: ChildProcess;
  stopped: boolean;
  restartTimer?: NodeJS.Timeout;
}
const hosts: Host[] = hostNames.map((name) => ({ name, stopped: false }));
let running = true;

function spawnHost(host: Host): void {
  if (!running) return;
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, FIXTURE_HOST], {
    cwd: repoRoot,
    env: {
      ...process.env,
      TOOLWIRE_SERVER: url,
      TOOLWIRE_TOKEN: token(host.name),
      TOOLWIRE_SOAK: RUN_ID,
      PIDDIR,
      FIXTURE_GRACE_MS: '300',
      FIXTURE_DRAIN_MS: '200',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
    detached: true,
  });
  host.child = child;
  host.stopped = false;
  // Whatever ended it (a chaos kill, a graceful SIGTERM, a crash), a host comes back after a while.
  child.on('exit', () => {
    if (host.child !== child) return;
    host.child = undefined;
    host.stopped = false;
    if (running) host.restartTimer = setTimeout(() => spawnHost(host), 100 + random() * 1_400);
  });
}

function signal(host: Host, sig: NodeJS.Signals): boolean {
  const pid = host.child?.pid;
  if (pid === undefined || host.child!.exitCode !== null || host.child!.signalCode !== null) return false;
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

for (const host of hosts) spawnHost(host);
const garbage = garbageNames.map((name) => new GarbageHost(url, token(name), MAX_PAYLOAD, pick, random));
for (const g of garbage) g.start();

// ---- callers ------------------------------------------------------------------------------------

const TOOLS: readonly (readonly [string, number])[] = [
  ['echo', 30],
  ['late', 18],
  ['wait', 8],
  ['tree', 6],
  ['stubborn', 3],
  ['leaver', 4],
  ['junk', 12],
  ['missing', 3],
  ['bad-input', 3],
];
const totalWeight = TOOLS.reduce((n, [, w]) => n + w, 0);
function pickTool(): string {
  let r = random() * totalWeight;
  for (const [name, w] of TOOLS) if ((r -= w) < 0) return name;
  return 'echo';
}

let issued = 0;
const byExit = new Map<string, number>();
const pending = new Set<Promise<void>>();
const chaos = new Map<string, number>();
const note = (what: string) => chaos.set(what, (chaos.get(what) ?? 0) + 1);

/** Exposed tool names now advertised (refreshed on `toolsChanged`): callers aim at live tools mostly. */
let advertised = new Set<string>();
server.router.on('toolsChanged', () => (advertised = new Set(server.router.tools().map((t) => t.name))));

function target(kind: string): string {
  if (kind === 'missing') return `${pick(hostNames)}__no_such_tool`;
  const tool = kind === 'bad-input' ? 'echo' : kind;
  const owners = kind === 'junk' && garbageNames.length > 0 ? garbageNames : hostNames;
  const live = owners.filter((o) => advertised.has(`${o}__${tool}`));
  return `${pick(live.length > 0 ? live : owners)}__${tool}`;
}

function oneCall(agent: string): Promise<void> {
  const kind = pickTool();
  const name = target(kind);
  const input = kind === 'bad-input' ? 42 : kind === 'late' ? { ms: Math.floor(random() * 300) } : { n: issued };
  const controller = new AbortController();
  const deadlineMs = random() < 0.4 ? undefined : 50 + Math.floor(random() * 2_000);
  let abortTimer: NodeJS.Timeout | undefined;
  if (random() < 0.05) abortTimer = setTimeout(() => controller.abort(), random() * 1_000);
  issued++;
  const begun = performance.now();
  const call = server.executor
    .execute({ name, input, agent, signal: controller.signal, ...(deadlineMs && { deadlineMs }) })
    .then(async (result) => {
      const key = result.outcome === 'completed' ? String(result.capture.exitCode) : result.outcome;
      byExit.set(key, (byExit.get(key) ?? 0) + 1);
      // The host of that tool is down (an instant 69 or 127): do not spin on it while it restarts.
      if ((key === '69' || key === '127') && kind !== 'missing' && performance.now() - begun < 5) {
        await new Promise((r) => setTimeout(r, 20 + random() * 80));
      }
    })
    .catch((error: unknown) => {
      byExit.set('threw', (byExit.get('threw') ?? 0) + 1);
      console.error('soak: execute threw', error);
    })
    .finally(() => {
      clearTimeout(abortTimer);
      pending.delete(call);
    });
  pending.add(call);
  return call;
}

async function caller(k: number): Promise<void> {
  const agent = `caller-${k}`;
  while (running) {
    await oneCall(agent);
    if (random() < 0.1) await new Promise((r) => setTimeout(r, random() * 50));
  }
}

// ---- chaos --------------------------------------------------------------------------------------

function chaosStep(): void {
  const host = pick(hosts);
  const action = pick(['kill', 'stop', 'term', 'stop-calls', 'stop-calls', 'junk', 'none', 'none'] as const);
  switch (action) {
    case 'kill':
      if (signal(host, 'SIGKILL')) note('host SIGKILL');
      return;
    case 'stop':
      if (!host.stopped && signal(host, 'SIGSTOP')) {
        note('host SIGSTOP/SIGCONT');
        host.stopped = true;
        const stoppedChild = host.child;
        setTimeout(
          () => {
            if (host.child !== stoppedChild || !host.stopped) return;
            host.stopped = false;
            signal(host, 'SIGCONT');
          },
          200 + random() * 2_500,
        );
      }
      return;
    case 'term':
      if (!host.stopped && signal(host, 'SIGTERM')) note('host SIGTERM (graceful)');
      return;
    case 'stop-calls':
      note('executor.stop(agent)');
      server.executor.stop(`caller-${Math.floor(random() * CALLERS)}`);
      return;
    case 'junk':
      note('raw junk connection');
      void rawJunk(port, token(pick(garbageNames.length ? garbageNames : hostNames)), pick, random);
      return;
    case 'none':
  }
}

// ---- run ----------------------------------------------------------------------------------------

console.log(`soak: ${SECONDS}s, ${HOSTS} host processes, ${GARBAGE} garbage hosts, ${CALLERS} callers, seed ${firstSeed}, server ${url}`);
const startedAt = Date.now();
const chaosTimer = setInterval(chaosStep, 400);
const rssTimer = setInterval(() => {
  rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  const s = Math.round((Date.now() - startedAt) / 1000);
  if (s % 10 === 0) console.log(`soak: ${s}s issued ${issued}, in flight ${pending.size}, rss ${mb(process.memoryUsage().rss)}`);
}, 1_000);
const callers = Array.from({ length: CALLERS }, (_, k) => caller(k));
const attacks: Promise<SoakAttackReport> = ATTACKS
  ? runSoakAttacks({ url, stormToken: token(STORM), durationMs: Math.max(1_000, SECONDS * 1_000 - 5_000) })
  : Promise.resolve({});
let interrupted = false;
await new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, SECONDS * 1_000);
  const onSignal = (): void => {
    interrupted = true;
    clearTimeout(timer);
    resolve();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
});

// ---- wind down: no new calls, resume everything, let every call settle (bounded) ----------------
running = false;
clearInterval(chaosTimer);
for (const host of hosts) {
  clearTimeout(host.restartTimer);
  if (host.stopped) signal(host, 'SIGCONT');
  host.stopped = false;
}
await Promise.all(callers);
const attackReport = await attacks;
const settleBound = DEADLINE_MS + GRACE_MS + 4_000;
await Promise.race([Promise.all([...pending]), new Promise((r) => setTimeout(r, settleBound))]);
const unsettled = pending.size;
loopDelay.disable();
globalThis.gc?.();
const rssEnd = process.memoryUsage().rss;
clearInterval(rssTimer);

// ---- tear down every process we started, then look for any that outlived it ---------------------
for (const g of garbage) g.stop();
await Promise.all(
  hosts.map(async (host) => {
    const child = host.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    signal(host, 'SIGTERM');
    const timer = setTimeout(() => signal(host, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }),
);
await server.close();
let leaked = markedProcesses(RUN_ID);
for (const until = Date.now() + 3_000; leaked.length > 0 && Date.now() < until; leaked = markedProcesses(RUN_ID)) {
  await new Promise((r) => setTimeout(r, 100)); // processes already signalled take a moment to be reaped
}
killProcesses(leaked);
rmSync(PIDDIR, { recursive: true, force: true });

// ---- report ---------------------------------------------------------------------------------------
function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
const settled = [...byExit.entries()].sort(([a], [b]) => (Number(a) || 1e9) - (Number(b) || 1e9));
const garbageActions = new Map<string, number>();
for (const g of garbage) for (const [k, v] of g.actions) garbageActions.set(k, (garbageActions.get(k) ?? 0) + v);
console.log('');
console.log(`toolwire soak summary (${((Date.now() - startedAt) / 1000).toFixed(0)} s${interrupted ? ', interrupted' : ''}, seed ${firstSeed})`);
console.log(`  calls issued:            ${issued}`);
console.log(`  settled by exit code:    ${settled.map(([k, v]) => `${k}: ${v}`).join(', ')}`);
console.log(`  unsettled:               ${unsettled}`);
console.log(
  `  leaked child processes:  ${leaked.length}${leaked.length ? ` (${leaked.map((p) => `pid ${p.pid} ppid ${p.ppid} pgid ${p.pgid}: ${p.cmd}`).join('; ')})` : ''}`,
);
console.log(`  server RSS:              start ${mb(rssStart)}, end ${mb(rssEnd)} (after GC${globalThis.gc ? '' : ': not exposed'}), peak ${mb(rssPeak)}`);
console.log(`  worst event-loop stall:  ${(loopDelay.max / 1e6).toFixed(1)} ms (p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms)`);
for (const line of describeAttacks(attackReport)) console.log(`  ${line}`);
console.log(`  chaos:                   ${[...chaos.entries()].map(([k, v]) => `${k} ×${v}`).join(', ')}`);
console.log(`  garbage host behaviours: ${[...garbageActions.entries()].map(([k, v]) => `${k} ×${v}`).join(', ')}`);
process.exit(unsettled > 0 || leaked.length > 0 || byExit.has('threw') || attackFailed(attackReport) ? 1 : 0);
