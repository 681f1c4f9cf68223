/**
 * The door scenarios (issue 12): the MCP door against the MCP SDK's own Streamable HTTP server with
 * the tool in-process (`door`), and the door with many identities configured against the door with
 * one (`ids`), with the server CPU a failed host upgrade costs on each.
 */
import { type Arm, type ArmResult, compare, startDoor, startSdkBaseline, stopArm } from './arms.js';
import { buildServerOnce, Helper } from './helpers.js';
import { median } from './report.js';
import type { Plan } from './scenarios.js';

export interface DoorResult {
  /** One per shape of the plan (c=1, c=16): the door, and the SDK's server. */
  door: ArmResult[];
  sdk: ArmResult[];
}

export interface IdsResult {
  /** The door with one host and one caller identity. */
  one: ArmResult;
  /** The door with `hosts` host and `callers` caller identities. */
  many: ArmResult;
  hosts: number;
  callers: number;
  /**
   * Server CPU per failed host upgrade (a token nobody has), µs, on each server, and on a bare
   * `node:http` server that answers every upgrade 401 (`floor`: the connection itself);
   * `overFloor`: the median over segments of `many − floor`, what toolwire adds to it.
   */
  failedUpgradeCpuUs: { one: number; many: number; floor: number; overFloor: number };
  /** The HTTP statuses the failed upgrades got (401 until the address is throttled, then 429). */
  failedUpgradeStatuses: Record<string, number>;
}

export async function doorScenario(plan: Plan['door'], log: (line: string) => void): Promise<DoorResult> {
  const live: Arm[] = [];
  try {
    live.push(await startDoor(), await startSdkBaseline());
    const out: DoorResult = { door: [], sdk: [] };
    for (const shape of plan) {
      const [d, b] = await compare(live, shape);
      out.door.push(d!);
      out.sdk.push(b!);
      log(
        `door c=${shape.concurrency}: door ${Math.round(d!.stats.callsPerSec)} calls/s p50 ${Math.round(d!.stats.p50Us)} µs; sdk ${Math.round(b!.stats.callsPerSec)} calls/s p50 ${Math.round(b!.stats.p50Us)} µs`,
      );
    }
    return out;
  } finally {
    await Promise.all(live.map(stopArm));
  }
}

/**
 * Failed upgrades each server gets before the measured ones, after one full GC (what its start left
 * is not counted): its refusal path optimised and its limiter in the state the measured ones meet.
 */
const FAILED_UPGRADE_WARMUP = 2_000;
/** Measured segments of failed upgrades per server (the plan's count split evenly). */
const FAILED_UPGRADE_SEGMENTS = 10;

/**
 * Server CPU per failed upgrade of `server`, µs: `count` upgrades with an unknown token, 8 at a time,
 * from `driver`, to `url`. No full GC before a segment: on these idle servers the only garbage is the
 * flood's own, and a full GC with no connection open drops the hidden classes of Node's socket and
 * HTTP objects and the optimised code that relies on them, so each segment paid for recompiling
 * Node's `net`/`http` path (TurboFan on V8's threads, and the main thread in slower code until then):
 * a cost per segment, not per upgrade, and the source of the per-segment spread (bench/README.md, ids).
 */
async function failedUpgradeCpu(server: Helper, driver: Helper, count: number, url: string): Promise<{ us: number; statuses: Record<string, number> }> {
  const before = Number((await server.request('info')).cpuUs);
  const reply = await driver.request('badUpgrades', { count, concurrency: 8, url });
  const after = Number((await server.request('info')).cpuUs);
  return { us: (after - before) / count, statuses: reply.statuses as Record<string, number> };
}

export async function idsScenario(plan: Plan['ids'], log: (line: string) => void): Promise<IdsResult> {
  const live: Arm[] = [];
  const flood: Helper[] = [];
  try {
    live.push(await startDoor(), await startDoor({ hosts: plan.hosts, callers: plan.callers }));
    const [one, many] = await compare(live, plan.load);
    // Failed upgrades: three servers of their own, idle but for them — toolwire from `dist/` (as
    // installed; from `src/`, tsx's keepNames adds CPU to every named function) with the plan's
    // identities and with 1 + 1, and a bare node:http server that answers every upgrade 401 — in
    // interleaved segments, the order rotated each segment, so a burst of other work on the machine
    // hits all three alike; medians of the segments.
    buildServerOnce();
    const start = async (name: string, env: Record<string, string>, built: boolean): Promise<{ helper: Helper; url: string }> => {
      const { helper, ready } = await Helper.start(name, env, 120_000, built);
      flood.push(helper);
      return { helper, url: String(ready.url) };
    };
    const arms = {
      many: await start('toolwire-server', { BENCH_HOSTS: String(plan.hosts), BENCH_CALLERS: String(plan.callers) }, true),
      one: await start('toolwire-server', { BENCH_HOSTS: '1', BENCH_CALLERS: '1' }, true),
      floor: await start('upgrade-floor-server', {}, false),
    };
    const driver = live[1]!.driver!;
    const names = ['many', 'floor', 'one'] as const;
    const per = { one: [] as number[], many: [] as number[], floor: [] as number[], over: [] as number[] };
    let statuses: Record<string, number> = {};
    const warmup = Math.min(FAILED_UPGRADE_WARMUP, plan.failedUpgrades);
    for (const name of names) {
      await arms[name].helper.request('rss'); // full GC, before the warm-up
      await failedUpgradeCpu(arms[name].helper, driver, warmup, arms[name].url);
    }
    const count = Math.max(1, Math.round(plan.failedUpgrades / FAILED_UPGRADE_SEGMENTS));
    for (let k = 0; k < FAILED_UPGRADE_SEGMENTS; k++) {
      const us: Partial<Record<(typeof names)[number], number>> = {};
      for (let j = 0; j < names.length; j++) {
        const name = names[(k + j) % names.length]!;
        const r = await failedUpgradeCpu(arms[name].helper, driver, count, arms[name].url);
        us[name] = r.us;
        per[name].push(r.us);
        if (name === 'many') for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
      }
      per.over.push(us.many! - us.floor!);
    }
    const f = { one: median(per.one), many: median(per.many), floor: median(per.floor), overFloor: median(per.over) };
    statuses = Object.fromEntries(Object.entries(statuses).sort());
    log(
      `ids: door with ${plan.hosts} + ${plan.callers} identities ${Math.round(many!.stats.callsPerSec)} calls/s, with 1 + 1 ${Math.round(one!.stats.callsPerSec)} calls/s; ` +
        `failed upgrade ${f.many.toFixed(1)} / ${f.one.toFixed(1)} µs of server CPU (bare node:http 401: ${f.floor.toFixed(1)} µs; ` +
        `over it per segment ${Math.min(...per.over).toFixed(1)}–${Math.max(...per.over).toFixed(1)} µs)`,
    );
    return {
      one: one!,
      many: many!,
      hosts: plan.hosts,
      callers: plan.callers,
      failedUpgradeCpuUs: f,
      failedUpgradeStatuses: statuses,
    };
  } finally {
    await Promise.all([...live.map(stopArm), ...flood.map((h) => h.stop())]);
  }
}
