/**
 * The arms a scenario compares, and the comparison itself. Each arm is a set of live helper
 * processes: a server role that runs the load and (except the spawn floor) a tool-host role. A
 * comparison warms every arm up, then runs the calls in interleaved segments (A B B A A B …) so slow
 * drift and other work on the machine hit every arm alike, and merges each arm's segments.
 */
import { readFileSync } from 'node:fs';
import { type LoadStats, type Segment, summarize } from './load.js';
import { Helper } from './helpers.js';
import { callerToken } from './proc/tools.js';
import type { LoadShape } from './scenarios.js';

/** Tools every toolwire bench host advertises (see proc/toolwire-host.ts). */
export const TOOLS_PER_HOST = 10;

export type ArmName = 'toolwire' | 'toolwire+obs' | 'toolwire-execute' | 'raw-ws' | 'spawn-floor' | 'door' | 'mcp-sdk' | 'nats-floor';

/**
 * Live processes of one arm. `load` are the extra fields of its `load` command (tool name, path).
 * The load runs in `driver` when there is one (the door arms: an MCP client process), else in
 * `server`; the CPU per call of the table's "srv" column is always the server role's.
 */
export interface Arm {
  name: ArmName;
  server: Helper;
  host?: Helper;
  driver?: Helper;
  load: Record<string, unknown>;
  /** More processes whose CPU per call to record (name → pid; read from `/proc`): the cluster scenario's nodes and nats-server. */
  watch?: Record<string, number>;
}

/** One measured arm of one scenario. */
export interface ArmResult {
  arm: ArmName;
  shape: LoadShape;
  stats: LoadStats;
  /** Calls/s of each measured segment, in order (segment k of every arm ran back to back). */
  segmentRates: number[];
  /** CPU time of the driver process (the door arms' MCP client) per measured call, µs. */
  driverCpuUsPerCall?: number;
  /** CPU time of the host-role process (with its spawn helper's) per measured call, µs (absent for the spawn floor). */
  hostCpuUsPerCall?: number;
  /** CPU time of each of the arm's `watch` processes per measured call, µs. */
  watchCpuUsPerCall?: Record<string, number>;
  /** Peak RSS of the server-role process over its life, KiB. */
  serverPeakRssKiB: number;
  /** Peak RSS of the tool-host process (absent for the spawn floor, a single process). */
  hostPeakRssKiB?: number;
  /** RSS of the tool host's spawn helper at the end, KiB (only when subprocess tools ran). */
  hostHelperRssKiB?: number;
  bufferutil: { server: boolean; host?: boolean };
}

async function startPair(serverName: string, hostName: string, name: ArmName, env: Record<string, string>, load: Record<string, unknown>): Promise<Arm> {
  const { helper: server, ready } = await Helper.start(serverName, env);
  try {
    const { helper: host } = await Helper.start(hostName, { BENCH_URL: String(ready.url), BENCH_OBSERVE: env.BENCH_OBSERVE ?? '0' });
    return { name, server, host, load };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * toolwire: `ToolwireServer` + one `ToolHost` (identity `h0`); calls go to `h0__<tool>` through
 * `route()` (arm `toolwire`) or `execute()` (arm `toolwire-execute`; `toolwire+obs` with `observe`).
 */
export async function startToolwire(tool: 'echo' | 'cat', options: { path?: 'route' | 'execute'; recordDir?: string; observe?: boolean } = {}): Promise<Arm> {
  const env: Record<string, string> = options.recordDir ? { BENCH_RECORD_DIR: options.recordDir } : {};
  // Observability (issue 16): info logs on server and host and the server's metrics, else none of them.
  env.BENCH_OBSERVE = options.observe === true ? '1' : '0';
  const path = options.path ?? 'route';
  const name: ArmName = options.observe === true ? 'toolwire+obs' : path === 'execute' ? 'toolwire-execute' : 'toolwire';
  const arm = await startPair('toolwire-server', 'toolwire-host', name, env, { name: `h0__${tool}`, path });
  await arm.server.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
  return arm;
}

/**
 * The MCP door: `ToolwireServer` configured with `identities.hosts` host and `identities.callers`
 * caller identities (default 1 each), the echo `ToolHost` `h0`, and an MCP SDK client process
 * calling `h0__echo` at `/mcp` with the last caller's token.
 */
export async function startDoor(identities: { hosts?: number; callers?: number } = {}): Promise<Arm> {
  const callers = identities.callers ?? 1;
  const env = { BENCH_HOSTS: String(identities.hosts ?? 1), BENCH_CALLERS: String(callers) };
  const { helper: server, ready } = await Helper.start('toolwire-server', env);
  let host: Helper | undefined;
  try {
    host = (await Helper.start('toolwire-host', { BENCH_URL: String(ready.url) })).helper;
    await server.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    const driver = (await Helper.start('mcp-client', { BENCH_MCP_URL: String(ready.mcpUrl), BENCH_MCP_TOKEN: callerToken(callers - 1) })).helper;
    return { name: 'door', server, host, driver, load: {} };
  } catch (error) {
    await host?.stop();
    await server.stop();
    throw error;
  }
}

/** The door's baseline: the MCP SDK's own Streamable HTTP server with the tool in-process, and the same MCP client process. */
export async function startSdkBaseline(): Promise<Arm> {
  const { helper: server, ready } = await Helper.start('mcp-sdk-server');
  try {
    const driver = (await Helper.start('mcp-client', { BENCH_MCP_URL: String(ready.mcpUrl) })).helper;
    return { name: 'mcp-sdk', server, driver, load: {} };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** The raw-WebSocket baseline: the same two roles with plain `ws` and minimal frames. */
export async function startRaw(): Promise<Arm> {
  const arm = await startPair('raw-server', 'raw-host', 'raw-ws', {}, {});
  await arm.server.request('wait');
  return arm;
}

/** The subprocess floor: `spawn('cat')` in one process. */
export async function startSpawnFloor(): Promise<Arm> {
  return { name: 'spawn-floor', server: (await Helper.start('spawn-floor')).helper, load: {} };
}

export async function stopArm(arm: Arm | undefined): Promise<void> {
  await arm?.driver?.stop();
  await arm?.host?.stop();
  await arm?.server.stop();
}

/** CPU time of `helper`'s process so far, µs (0 without one). */
async function cpuOf(helper: Helper | undefined): Promise<number> {
  return helper ? Number((await helper.request('info')).cpuUs) : 0;
}

/** CPU time (user + system, all threads) of process `pid` so far, µs, from `/proc/<pid>/stat` (clock ticks of 10 ms). */
function procCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** CPU so far of each watched process, µs. */
function watchedCpu(arm: Arm): Record<string, number> {
  return Object.fromEntries(Object.entries(arm.watch ?? {}).map(([name, pid]) => [name, procCpuUs(pid)]));
}

/**
 * One segment of `count` calls on `arm`, with the host's CPU time over it (µs). With a driver, the
 * segment's `cpuUs` is the server role's CPU over it (the driver's is not toolwire's, nor the baseline's).
 * With `rewarm` > 0, the full GC that starts a segment is followed by `rewarm` untimed calls of the
 * same shape (a load of its own, outside every figure) and the timed calls run without another GC.
 */
export async function segment(
  arm: Arm,
  shape: LoadShape,
  count: number,
  rewarm = 0,
): Promise<{ segment: Segment; hostCpuUs: number; watchCpuUs: Record<string, number> }> {
  const load = { ...arm.load, concurrency: shape.concurrency, bytes: shape.bytes };
  if (rewarm > 0) {
    const warm = (await (arm.driver ?? arm.server).request('load', { ...load, count: rewarm })).segment as Segment;
    if (warm.errors > 0) throw new Error(`${arm.name}: ${warm.errors} of ${warm.calls} re-warm calls failed, first: ${warm.firstError}`);
  }
  // The full GC that starts a timed segment (when no re-warm ran it) is a request of its own before
  // the watched processes' CPU readings (from `/proc`: the whole request), as it is not a call's work.
  const gcApart = rewarm === 0 && arm.watch !== undefined;
  if (gcApart) await (arm.driver ?? arm.server).request('load', { ...load, count: 0, gc: true });
  const watched = watchedCpu(arm);
  const before = await cpuOf(arm.host);
  const serverBefore = arm.driver ? await cpuOf(arm.server) : 0;
  const reply = await (arm.driver ?? arm.server).request('load', { ...load, count, gc: rewarm === 0 && !gcApart });
  const s = reply.segment as Segment;
  if (s.errors > 0) throw new Error(`${arm.name}: ${s.errors} of ${s.calls} calls failed, first: ${s.firstError}`);
  if (arm.driver) {
    s.driverCpuUs = s.cpuUs;
    s.cpuUs = (await cpuOf(arm.server)) - serverBefore;
  }
  const after = await cpuOf(arm.host);
  const watchCpuUs = watchedCpu(arm);
  for (const name of Object.keys(watchCpuUs)) watchCpuUs[name]! -= watched[name]!;
  return { segment: s, hostCpuUs: after - before, watchCpuUs };
}

/** Segments per comparison: ≥ 20 × concurrency calls each, 1 … 10 of them. */
export function segmentsFor(shape: LoadShape): number {
  return Math.min(10, Math.max(1, Math.floor(shape.count / (20 * shape.concurrency))));
}

/** Warm up each arm, then measure `shape` on every arm in interleaved segments. */
export async function compare(arms: Arm[], shape: LoadShape): Promise<ArmResult[]> {
  for (const arm of arms) if (shape.warmup > 0) await segment(arm, shape, shape.warmup);
  const n = segmentsFor(shape);
  const segments = arms.map(() => [] as Segment[]);
  const hostCpu = arms.map(() => 0);
  const watchCpu: Record<string, number>[] = arms.map(() => ({}));
  for (let k = 0; k < n; k++) {
    const count = Math.floor(shape.count / n) + (k < shape.count % n ? 1 : 0);
    // A B, B A, A B …: each arm goes first as often as the other.
    const order = arms.map((_, i) => i);
    if (k % 2 === 1) order.reverse();
    for (const i of order) {
      const m = await segment(arms[i]!, shape, count, shape.rewarm ?? 0);
      segments[i]!.push(m.segment);
      hostCpu[i]! += m.hostCpuUs;
      for (const [name, us] of Object.entries(m.watchCpuUs)) watchCpu[i]![name] = (watchCpu[i]![name] ?? 0) + us;
    }
  }
  return Promise.all(
    arms.map(async (arm, i) => {
      const stats = summarize(segments[i]!);
      const s = await arm.server.request('info');
      const result: ArmResult = {
        arm: arm.name,
        shape,
        stats,
        segmentRates: segments[i]!.map((g) => g.calls / g.seconds),
        serverPeakRssKiB: Number(s.peakRssKiB),
        bufferutil: { server: Boolean(s.bufferutil) },
      };
      if (arm.watch) result.watchCpuUsPerCall = Object.fromEntries(Object.entries(watchCpu[i]!).map(([name, us]) => [name, us / stats.calls]));
      if (arm.driver) result.driverCpuUsPerCall = segments[i]!.reduce((n, g) => n + (g.driverCpuUs ?? 0), 0) / stats.calls;
      if (arm.host) {
        const h = await arm.host.request('info');
        result.hostCpuUsPerCall = hostCpu[i]! / stats.calls;
        result.hostPeakRssKiB = Number(h.peakRssKiB);
        if (h.helperRssKiB) result.hostHelperRssKiB = Number(h.helperRssKiB); // its spawn helper (s5)
        result.bufferutil.host = Boolean(h.bufferutil);
      }
      return result;
    }),
  );
}
