/**
 * The door scenarios (issue 12): the MCP door against the MCP SDK's own Streamable HTTP server with
 * the tool in-process (`door`), and the door with many identities configured against the door with
 * one (`ids`), with the server CPU a failed host upgrade costs on each.
 */
import { type Arm, type ArmResult, compare, startDoor, startSdkBaseline, stopArm } from './arms.js';
import { Helper } from './helpers.js';
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

/** Server CPU per failed upgrade of `server`, µs: `count` upgrades with an unknown token, 8 at a time, from `driver`. */
async function failedUpgradeCpu(server: Helper, driver: Helper, count: number, url?: string): Promise<{ us: number; statuses: Record<string, number> }> {
  const before = Number((await server.request('info')).cpuUs);
  const reply = await driver.request('badUpgrades', { count, concurrency: 8, ...(url && { url }) });
  const after = Number((await server.request('info')).cpuUs);
  return { us: (after - before) / count, statuses: reply.statuses as Record<string, number> };
}

export async function idsScenario(plan: Plan['ids'], log: (line: string) => void): Promise<IdsResult> {
  const live: Arm[] = [];
  try {
    live.push(await startDoor(), await startDoor({ hosts: plan.hosts, callers: plan.callers }));
    const [one, many] = await compare(live, plan.load);
    // Failed upgrades in interleaved segments on the three servers (as the load segments are), so
    // a burst of other work on the machine hits all three alike; medians of the segments.
    const { helper: floorServer, ready } = await Helper.start('upgrade-floor-server');
    const per = { one: [] as number[], many: [] as number[], floor: [] as number[], over: [] as number[] };
    let statuses: Record<string, number> = {};
    try {
      const segments = 5;
      const count = Math.max(1, Math.round(plan.failedUpgrades / segments));
      for (let k = 0; k < segments; k++) {
        const many = await failedUpgradeCpu(live[1]!.server, live[1]!.driver!, count);
        const floor = await failedUpgradeCpu(floorServer, live[1]!.driver!, count, String(ready.mcpUrl));
        const one = await failedUpgradeCpu(live[0]!.server, live[0]!.driver!, count);
        per.many.push(many.us);
        per.floor.push(floor.us);
        per.one.push(one.us);
        per.over.push(many.us - floor.us);
        for (const [status, n] of Object.entries(many.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
      }
    } finally {
      await floorServer.stop();
    }
    const f = { one: median(per.one), many: median(per.many), floor: median(per.floor), overFloor: median(per.over) };
    statuses = Object.fromEntries(Object.entries(statuses).sort());
    log(
      `ids: door with ${plan.hosts} + ${plan.callers} identities ${Math.round(many!.stats.callsPerSec)} calls/s, with 1 + 1 ${Math.round(one!.stats.callsPerSec)} calls/s; ` +
        `failed upgrade ${f.many.toFixed(1)} / ${f.one.toFixed(1)} µs of server CPU (bare node:http 401: ${f.floor.toFixed(1)} µs)`,
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
    await Promise.all(live.map(stopArm));
  }
}
