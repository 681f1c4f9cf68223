/**
 * `pnpm bench --only mcp` (issue 14): a call to a tool of a stdio MCP server through toolwire
 * (server → tool host process → MCP server → back; the server in this process, the host a
 * `toolwire host --mcp-config` process) against the same MCP server called directly by an MCP SDK
 * client in this process (the floor of that server). The MCP server is the tests' fake
 * (`packages/client/test/fixtures/mcp-fake.mjs`), its `echo` tool; both arms speak to it over stdio
 * pipes (JSON lines), the floor through the SDK's `StdioClientTransport`. For c = 1 and c = 8:
 * calls/s over `calls` calls, the p50 latency, and the CPU time per call of each process (this
 * process — the SDK client of the floor, the server of toolwire —, the host, the MCP server).
 * Rounds alternate floor / toolwire / ceiling; the c = 8 ratio is the median of the rounds' ratios
 * (each pair ran back to back), the other figures are medians over rounds.
 *
 * The ceiling arm is toolwire's own path without the MCP server: the same server and executor → a
 * tool host process (`proc/toolwire-host.ts`) → its in-process `echo` tool. It bounds what the MCP
 * arm can reach on the machine at hand: the MCP arm is that path plus a third process and its hop.
 * In series: a call of the MCP arm goes through the ceiling's path and then through an MCP client →
 * server exchange like the floor's, and at a fixed number of calls in flight (closed loop) the two
 * latencies add, so its calls/s are at most about 1 / (1 / floor + 1 / ceiling), i.e. ceiling ÷
 * (floor + ceiling) × the floor's. The series figures put each round's MCP arm against that bound:
 * what is left below it is the host's own MCP work and the third process's share of the CPUs.
 *
 * BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`) goes to the host and to both MCP servers.
 * BENCH_MCP_SETSID=1 starts the floor's MCP server through `setsid` (in a session of its own, as the
 * host starts its servers: `detached`), to see what the session costs on the machine at hand.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolwireServer } from '@toolwire/server';
import { hostToken } from './proc/tools.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
const FAKE = join(repo, 'packages', 'client', 'test', 'fixtures', 'mcp-fake.mjs');
const CLI = join(repo, 'packages', 'cli', 'src', 'main.ts');
const HOST_TOKEN = 'bench-host-token-aaaaaaaaaaaaaaaaaaaa';

/** CPU time per call, µs, of each process of an arm (`host`: toolwire only). */
export interface McpCpu {
  /** This process: the floor's SDK client, or toolwire's server and executor. */
  bench: number;
  host?: number;
  /** The MCP server the arm calls. */
  mcp: number;
}

/** One arm's figures (medians over rounds). */
export interface McpArm {
  c1PerSec: number;
  c8PerSec: number;
  /** p50 latency at c = 1, µs. */
  p50Us: number;
  /** p50 latency at c = 8, µs. */
  p50c8Us: number;
  cpuC1: McpCpu;
  cpuC8: McpCpu;
}

export interface McpResult {
  rounds: number;
  calls: number;
  floor: McpArm;
  toolwire: McpArm;
  /** Toolwire's own path, no MCP server: server → host process → in-process echo. */
  ceiling?: McpArm;
  /** Median over rounds of toolwire c8 calls/s ÷ the floor's in the same round (target ≥ 0.7). */
  c8Ratio: number;
  /** The rounds' c8 ratios. */
  c8Ratios: number[];
  /** Median over rounds of the ceiling's c8 calls/s ÷ the floor's in the same round (no target: the bound of {@link c8Ratio}). */
  ceilingC8Ratio?: number;
  /**
   * Median over rounds of ceiling ÷ (floor + ceiling), c8 calls/s of the same round: the c8 ratio to
   * the floor that the ceiling's path and the floor's exchange allow in series (no target).
   */
  seriesC8Bound?: number;
  /** Median over rounds of toolwire c8 calls/s ÷ 1 / (1 / floor + 1 / ceiling) of the same round (no target; ≤ about 1). */
  seriesC8Ratio?: number;
  /** toolwire p50 ÷ (floor p50 × 1.5 + 300 µs), c = 1 (target ≤ 1). */
  p50Budget: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** CPU time (user + system) of process `pid` so far, µs (10 ms ticks); 0 when it is gone. */
function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** The child of `parent` whose command line contains `needle` (Linux `/proc`), if any. */
function childWith(parent: number | undefined, needle: string): number | undefined {
  if (parent === undefined) return undefined;
  try {
    for (const pid of readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).map(Number)) {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle)) return pid;
    }
  } catch {
    // no /proc: no CPU figures of that process
  }
  return undefined;
}

interface Pids {
  host?: number | undefined;
  mcp: number | undefined;
}

interface Drive {
  perSec: number;
  p50Us: number;
  cpu: McpCpu;
}

/** `calls` calls at concurrency `c`: calls/s, the p50 latency in µs, the CPU per call of each process. */
async function drive(call: () => Promise<void>, calls: number, c: number, pids: Pids): Promise<Drive> {
  const lat: number[] = [];
  let next = 0;
  const self0 = process.cpuUsage();
  const host0 = cpuUs(pids.host);
  const mcp0 = cpuUs(pids.mcp);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < calls) {
        next++;
        const s = performance.now();
        await call();
        lat.push((performance.now() - s) * 1000);
      }
    }),
  );
  const perSec = calls / ((performance.now() - t0) / 1000);
  const self = process.cpuUsage(self0);
  const cpu: McpCpu = { bench: (self.user + self.system) / calls, mcp: (cpuUs(pids.mcp) - mcp0) / calls };
  if (pids.host !== undefined) cpu.host = (cpuUs(pids.host) - host0) / calls;
  return { perSec, p50Us: median(lat), cpu };
}

interface Round {
  c1: Drive;
  c8: Drive;
}

async function measure(call: () => Promise<void>, calls: number, pids: Pids): Promise<Round> {
  return { c1: await drive(call, calls, 1, pids), c8: await drive(call, calls, 8, pids) };
}

function medianCpu(cpus: McpCpu[]): McpCpu {
  const out: McpCpu = { bench: median(cpus.map((x) => x.bench)), mcp: median(cpus.map((x) => x.mcp)) };
  if (cpus[0]!.host !== undefined) out.host = median(cpus.map((x) => x.host!));
  return out;
}

function medianArm(rounds: Round[]): McpArm {
  return {
    c1PerSec: median(rounds.map((r) => r.c1.perSec)),
    c8PerSec: median(rounds.map((r) => r.c8.perSec)),
    p50Us: median(rounds.map((r) => r.c1.p50Us)),
    p50c8Us: median(rounds.map((r) => r.c8.p50Us)),
    cpuC1: medianCpu(rounds.map((r) => r.c1.cpu)),
    cpuC8: medianCpu(rounds.map((r) => r.c8.cpu)),
  };
}

/** `rounds` alternating floor / toolwire rounds of `calls` calls at c = 1 and at c = 8. */
export async function mcpScenario(rounds: number, calls: number): Promise<McpResult> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-bench-mcp-'));
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a.length > 0);
  const floorArgs = [...extra, FAKE, 'normal'];
  const floorTransport =
    process.env.BENCH_MCP_SETSID === '1'
      ? new StdioClientTransport({ command: 'setsid', args: [process.execPath, ...floorArgs] })
      : new StdioClientTransport({ command: process.execPath, args: floorArgs });
  const floor = new Client({ name: 'bench-floor', version: '1' });
  await floor.connect(floorTransport);
  const server = new ToolwireServer({
    hosts: [
      { name: 'h0', token: HOST_TOKEN },
      { name: 'h1', token: hostToken(1) }, // the ceiling's host
    ],
    callers: [],
  });
  const address = await server.listen(0, '127.0.0.1');
  const ceilingHost = spawn(process.execPath, [...extra, '--conditions=@toolwire/source', '--import', 'tsx', join(repo, 'bench', 'proc', 'toolwire-host.ts')], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_URL: address.url, BENCH_FIRST: '1' },
  });
  const config = join(dir, '.mcp.json');
  await writeFile(config, JSON.stringify({ mcpServers: { fake: { command: process.execPath, args: [...extra, FAKE, 'normal'] } } }));
  const host = spawn(
    process.execPath,
    [
      ...extra,
      '--conditions=@toolwire/source',
      '--import',
      'tsx',
      CLI,
      'host',
      '--mcp-config',
      config,
      '--server',
      address.url,
      '--token',
      HOST_TOKEN,
      '--log-level',
      'error',
    ],
    {
      stdio: 'ignore',
    },
  );
  try {
    const until = Date.now() + 30_000;
    const names = (): string[] => server.router.tools().map((t) => t.name);
    while (!names().includes('h0__fake_echo') || !names().includes('h1__echo')) {
      if (Date.now() > until) throw new Error('the MCP tool or the ceiling host was not advertised within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const floorPids: Pids = { mcp: floorTransport.pid ?? undefined };
    const toolwirePids: Pids = { host: host.pid, mcp: childWith(host.pid, 'mcp-fake.mjs') };
    const ceilingPids: Pids = { host: ceilingHost.pid, mcp: undefined };
    const viaFloor = async () => {
      await floor.callTool({ name: 'echo', arguments: { text: 'hi' } });
    };
    const viaToolwire = async () => {
      const r = await server.executor.execute({ name: 'h0__fake_echo', input: { text: 'hi' }, agent: 'bench' });
      if (r.outcome !== 'completed' || r.capture.exitCode !== 0) throw new Error('a toolwire call failed');
    };
    const viaCeiling = async () => {
      const r = await server.executor.execute({ name: 'h1__echo', input: { text: 'hi' }, agent: 'bench' });
      if (r.outcome !== 'completed' || r.capture.exitCode !== 0) throw new Error('a ceiling call failed');
    };
    await measure(viaFloor, 200, floorPids); // warm-up
    await measure(viaToolwire, 200, toolwirePids);
    await measure(viaCeiling, 200, ceilingPids);
    const floors: Round[] = [];
    const toolwires: Round[] = [];
    const ceilings: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      floors.push(await measure(viaFloor, calls, floorPids));
      toolwires.push(await measure(viaToolwire, calls, toolwirePids));
      ceilings.push(await measure(viaCeiling, calls, ceilingPids));
    }
    const f = medianArm(floors);
    const t = medianArm(toolwires);
    const c8Ratios = toolwires.map((r, i) => r.c8.perSec / floors[i]!.c8.perSec);
    const series = (i: number): number => 1 / (1 / floors[i]!.c8.perSec + 1 / ceilings[i]!.c8.perSec);
    return {
      rounds,
      calls,
      floor: f,
      toolwire: t,
      ceiling: medianArm(ceilings),
      c8Ratio: median(c8Ratios),
      c8Ratios,
      ceilingC8Ratio: median(ceilings.map((r, i) => r.c8.perSec / floors[i]!.c8.perSec)),
      seriesC8Bound: median(floors.map((r, i) => series(i) / r.c8.perSec)),
      seriesC8Ratio: median(toolwires.map((r, i) => r.c8.perSec / series(i))),
      p50Budget: t.p50Us / (f.p50Us * 1.5 + 300),
    };
  } finally {
    host.kill('SIGTERM');
    ceilingHost.disconnect(); // the helper exits when its IPC channel closes
    await Promise.all([once(host, 'exit'), ceilingHost.exitCode === null ? once(ceilingHost, 'exit') : undefined]);
    await server.close();
    await floor.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** One line for the log of a run. */
export function mcpLine(r: McpResult): string {
  const cpu = (c: McpCpu): string => `${Math.round(c.bench)}${c.host === undefined ? '' : ` + ${Math.round(c.host)}`} + ${Math.round(c.mcp)}`;
  return (
    `floor ${Math.round(r.floor.c1PerSec)} / ${Math.round(r.floor.c8PerSec)} calls/s (c1 / c8), p50 ${Math.round(r.floor.p50Us)} µs, CPU µs/call c8 ${cpu(r.floor.cpuC8)}; ` +
    `toolwire ${Math.round(r.toolwire.c1PerSec)} / ${Math.round(r.toolwire.c8PerSec)} calls/s, p50 ${Math.round(r.toolwire.p50Us)} µs, CPU µs/call c8 ${cpu(r.toolwire.cpuC8)}; ` +
    (r.ceiling === undefined
      ? ''
      : `ceiling (host, in-process echo) ${Math.round(r.ceiling.c1PerSec)} / ${Math.round(r.ceiling.c8PerSec)} calls/s, CPU µs/call c8 ${Math.round(r.ceiling.cpuC8.bench)} + ${Math.round(r.ceiling.cpuC8.host ?? 0)}, c8 ${(r.ceilingC8Ratio ?? 0).toFixed(2)} × floor; `) +
    (r.seriesC8Bound === undefined || r.seriesC8Ratio === undefined
      ? ''
      : `floor and ceiling in series allow c8 ${r.seriesC8Bound.toFixed(2)} × floor, toolwire reaches ${r.seriesC8Ratio.toFixed(2)} × that; `) +
    `c8 ratio ${r.c8Ratio.toFixed(2)} (target ≥ 0.7), p50 budget ${r.p50Budget.toFixed(2)} (target ≤ 1)`
  );
}

/** The scenario's table (medians over runs). */
export function renderMcp(results: McpResult[], table: (header: string[], body: string[][]) => string): string {
  const med = (pick: (r: McpResult) => number): string => Math.round(median(results.map(pick))).toLocaleString('en-US');
  const cpu = (pick: (r: McpResult) => McpCpu, mcp = true): string => {
    const host = results[0] === undefined ? undefined : pick(results[0]).host;
    return `${med((r) => pick(r).bench)} / ${host === undefined ? '—' : med((r) => pick(r).host!)} / ${mcp ? med((r) => pick(r).mcp) : '—'}`;
  };
  const row = (name: string, arm: (r: McpResult) => McpArm, mcp = true): string[] => [
    name,
    `${med((r) => arm(r).c1PerSec)} / ${med((r) => arm(r).c8PerSec)}`,
    `${med((r) => arm(r).p50Us)} / ${med((r) => arm(r).p50c8Us)}`,
    cpu((r) => arm(r).cpuC1, mcp),
    cpu((r) => arm(r).cpuC8, mcp),
  ];
  const withCeiling = results.filter((r) => r.ceiling !== undefined);
  const rows = [row('MCP SDK client → MCP server (floor)', (r) => r.floor), row('toolwire server → host → MCP server', (r) => r.toolwire)];
  if (withCeiling.length === results.length && results.length > 0)
    rows.push(row('ceiling: toolwire server → host, in-process echo (no MCP)', (r) => r.ceiling!, false));
  return [
    `MCP server as a tool source (issue 14; ${results[0]?.rounds ?? 0} rounds × ${(results[0]?.calls ?? 0).toLocaleString('en-US')} calls per concurrency, median of ${results.length} run${results.length === 1 ? '' : 's'}; CPU of this process / the tool host / the MCP server):`,
    table(['arm', 'calls/s c1 / c8', 'p50 µs c1 / c8', 'CPU µs/call c1', 'CPU µs/call c8'], rows),
    ...(rows.length === 3
      ? [`ceiling c8 ÷ floor c8 (median of the rounds' ratios; bounds the MCP arm's ratio): ${median(results.map((r) => r.ceilingC8Ratio!)).toFixed(2)}`]
      : []),
    ...(results.length > 0 && results.every((r) => r.seriesC8Bound !== undefined && r.seriesC8Ratio !== undefined)
      ? [
          `floor and ceiling in series (c8 latencies add: 1 / (1 / floor + 1 / ceiling)) allow c8 ${median(results.map((r) => r.seriesC8Bound!)).toFixed(2)} × floor; ` +
            `toolwire c8 ÷ that: ${median(results.map((r) => r.seriesC8Ratio!)).toFixed(2)}`,
        ]
      : []),
  ].join('\n');
}
