/**
 * `node --import tsx bench/render-results.ts bench/results/<time>.jsonl [--markdown]` — the tables
 * and targets of a results file, as `pnpm bench` prints them at its end, from the JSON lines it
 * appends after every run: the runs of an interrupted `pnpm bench` (stopped before its last run
 * ended) still give their table.
 */
import { readFileSync } from 'node:fs';
import type { ArmResult } from './arms.js';
import type { ManyHostsResult } from './many-hosts.js';
import { render, type RunRecord } from './report.js';

const [file, flag] = process.argv.slice(2);
if (!file) throw new TypeError('usage: render-results FILE.jsonl [--markdown]');

type Line = Record<string, unknown> & { run: number; scenario: string; arm?: string };

/** An `ArmResult` back from its JSON line (`jsonLines` in report.ts spreads shape and stats). */
function armOf(l: Line): ArmResult {
  const n = (key: string): number => Number(l[key]);
  const result: ArmResult = {
    arm: l.arm as ArmResult['arm'],
    shape: { concurrency: n('concurrency'), bytes: n('bytes'), count: n('count'), warmup: n('warmup') },
    stats: { calls: n('calls'), seconds: n('seconds'), callsPerSec: n('callsPerSec'), p50Us: n('p50Us'), p99Us: n('p99Us'), cpuUsPerCall: n('cpuUsPerCall') },
    segmentRates: l.segmentRates as number[],
    serverPeakRssKiB: n('serverPeakRssKiB'),
    bufferutil: l.bufferutil as ArmResult['bufferutil'],
  };
  for (const key of ['driverCpuUsPerCall', 'hostCpuUsPerCall', 'hostPeakRssKiB', 'hostHelperRssKiB'] as const) {
    if (typeof l[key] === 'number') result[key] = l[key];
  }
  return result;
}

const records = new Map<number, RunRecord>();
const recordOf = (run: number): RunRecord => {
  let r = records.get(run);
  if (r === undefined) records.set(run, (r = { run, pairs: {} }));
  return r;
};
for (const text of readFileSync(file, 'utf8').split('\n')) {
  if (text.trim() === '') continue;
  const l = JSON.parse(text) as Line;
  const r = recordOf(l.run);
  const s = l.scenario;
  if (s === 's1' || s === 's2' || s === 's3' || s === 's4') {
    const pair = (r.pairs[s] ??= {} as NonNullable<RunRecord['pairs']['s1']>);
    if (l.arm === 'toolwire') pair.toolwire = armOf(l);
    else if (l.arm === 'raw-ws') pair.raw = armOf(l);
    else if (l.arm === 'toolwire-execute') pair.execute = armOf(l);
  } else if (s === 's5') {
    r.s5 ??= { toolwire: [], floor: [] };
    (l.arm === 'spawn-floor' ? r.s5.floor : r.s5.toolwire).push(armOf(l));
  } else if (s === 's6') {
    r.s6 = l as unknown as ManyHostsResult;
  } else if (s === 's7') {
    r.s7 = armOf(l);
  } else if (s === 'door') {
    r.door ??= { door: [], sdk: [] };
    (l.arm === 'mcp-sdk' ? r.door.sdk : r.door.door).push(armOf(l));
  } else if (s === 'ids') {
    const ids = (r.ids ??= {} as NonNullable<RunRecord['ids']>);
    if (l.identities === 'many') {
      Object.assign(ids, {
        many: armOf(l),
        hosts: l.hosts,
        callers: l.callers,
        failedUpgradeCpuUs: l.failedUpgradeCpuUs,
        failedUpgradeStatuses: l.failedUpgradeStatuses,
      });
    } else ids.one = armOf(l);
  } else if (s === 'cli') {
    r.cli = l as unknown as NonNullable<RunRecord['cli']>;
  } else if (s === 'abuse') {
    r.abuse = l as unknown as NonNullable<RunRecord['abuse']>;
  } else if (s === 'mcp') {
    r.mcp = l as unknown as NonNullable<RunRecord['mcp']>;
  }
}
const complete = [...records.values()].filter((r) => Object.keys(r.pairs).length > 0 || r.s6 !== undefined || r.door !== undefined || r.mcp !== undefined);
process.stdout.write(`${render(complete, flag === '--markdown')}\n`);
