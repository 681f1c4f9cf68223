/**
 * The measuring half of `pnpm bench --only mcp` (`mcp-source.ts`): drive one arm at a fixed
 * concurrency (closed loop) and read the CPU time of each of its processes from Linux `/proc`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

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

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/**
 * CPU time of process `pid` so far, µs: the sum over its threads of their time on a CPU
 * (`/proc/<pid>/task/<tid>/schedstat`, ns; the MCP servers' file reads run on libuv's threads), or
 * user + system time in 10 ms ticks where the kernel has no schedstat; 0 when it is gone.
 */
function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    if (existsSync(`/proc/${pid}/schedstat`)) {
      let ns = 0;
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        } catch {
          // the thread ended between the listing and the read
        }
      }
      return ns / 1000;
    }
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** The child of `parent` whose command line contains `needle` (Linux `/proc`), if any. */
export function childWith(parent: number | undefined, needle: string): number | undefined {
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

/** The processes of an arm besides this one, for their CPU time. */
export interface Pids {
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

/** One arm's figures in one round. */
export interface Round {
  c1: Drive;
  c8: Drive;
}

/** `calls` calls at c = 1, then `calls` at c = 8. */
export async function measure(call: () => Promise<void>, calls: number, pids: Pids): Promise<Round> {
  return { c1: await drive(call, calls, 1, pids), c8: await drive(call, calls, 8, pids) };
}

function medianCpu(cpus: McpCpu[]): McpCpu {
  const out: McpCpu = { bench: median(cpus.map((x) => x.bench)), mcp: median(cpus.map((x) => x.mcp)) };
  if (cpus[0]!.host !== undefined) out.host = median(cpus.map((x) => x.host!));
  return out;
}

/** An arm's figures: medians over its rounds. */
export function medianArm(rounds: Round[]): McpArm {
  return {
    c1PerSec: median(rounds.map((r) => r.c1.perSec)),
    c8PerSec: median(rounds.map((r) => r.c8.perSec)),
    p50Us: median(rounds.map((r) => r.c1.p50Us)),
    p50c8Us: median(rounds.map((r) => r.c8.p50Us)),
    cpuC1: medianCpu(rounds.map((r) => r.c1.cpu)),
    cpuC8: medianCpu(rounds.map((r) => r.c8.cpu)),
  };
}
