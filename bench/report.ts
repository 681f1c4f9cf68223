/**
 * Turning runs into the results: JSON lines (one per measured arm), the table of medians, and the
 * targets of issues 4 and 12 judged on the median of the per-run values.
 */
import { cpus, release, totalmem } from 'node:os';
import type { ArmResult } from './arms.js';
import { type AbuseResult, renderAbuse } from './abuse.js';
import { type CliResult, renderCli } from './cli.js';
import type { DoorResult, IdsResult } from './door.js';
import type { ManyHostsResult } from './many-hosts.js';
import { FAKE_LABEL, FS_LABEL, renderMcp } from './mcp-report.js';
import type { McpResult } from './mcp-source.js';
import { type LoadShape, shapeLabel } from './scenarios.js';

/** Everything one run measured; a scenario left out with `--only` is absent. */
export interface RunRecord {
  run: number;
  /** `toolwire` is `route()`; `execute` is `executor.execute()` (s1 and s2). */
  pairs: Partial<Record<'s1' | 's2' | 's3' | 's4', { toolwire: ArmResult; raw: ArmResult; execute?: ArmResult }>>;
  s5?: { toolwire: ArmResult[]; floor: ArmResult[] };
  s6?: ManyHostsResult;
  s7?: ArmResult;
  door?: DoorResult;
  ids?: IdsResult;
  cli?: CliResult;
  abuse?: AbuseResult;
  mcp?: McpResult;
}

export function machine(): { cpu: string; cores: number; memGiB: number; kernel: string; node: string } {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
}

/** JSON lines of one run: one per measured arm, one for s6. */
export function jsonLines(record: RunRecord, meta: Record<string, unknown>): string[] {
  const lines: object[] = [];
  const arm = (scenario: string, r: ArmResult): object => ({
    ...meta,
    run: record.run,
    scenario,
    arm: r.arm,
    ...r.shape,
    ...r.stats,
    hostCpuUsPerCall: r.hostCpuUsPerCall,
    driverCpuUsPerCall: r.driverCpuUsPerCall,
    segmentRates: r.segmentRates,
    serverPeakRssKiB: r.serverPeakRssKiB,
    hostPeakRssKiB: r.hostPeakRssKiB,
    hostHelperRssKiB: r.hostHelperRssKiB,
    bufferutil: r.bufferutil,
  });
  for (const [id, pair] of Object.entries(record.pairs)) {
    lines.push(arm(id, pair.toolwire), arm(id, pair.raw));
    if (pair.execute) lines.push(arm(id, pair.execute));
  }
  for (const r of [...(record.s5?.toolwire ?? []), ...(record.s5?.floor ?? [])]) lines.push(arm(`s5`, r));
  if (record.s6) lines.push({ ...meta, run: record.run, scenario: 's6', arm: 'toolwire', ...record.s6 });
  if (record.s7) lines.push(arm('s7', record.s7));
  for (const r of [...(record.door?.door ?? []), ...(record.door?.sdk ?? [])]) lines.push(arm('door', r));
  if (record.ids) {
    const { one, many, ...rest } = record.ids;
    lines.push({ ...arm('ids', many), identities: 'many', ...rest }, { ...arm('ids', one), identities: 'one' });
  }
  if (record.cli) lines.push({ ...meta, run: record.run, scenario: 'cli', ...record.cli });
  if (record.abuse) lines.push({ ...meta, run: record.run, scenario: 'abuse', ...record.abuse });
  if (record.mcp) lines.push({ ...meta, run: record.run, scenario: 'mcp', ...record.mcp });
  return lines.map((l) => JSON.stringify(l));
}

export function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

interface Row {
  scenario: string;
  arm: string;
  results: ArmResult[];
  /** Throughput relative to the baseline of the same run (paired segments), one per run. */
  ratios?: number[];
  /** Name of the baseline in the "vs base" column, when it is not the scenario's usual one. */
  baseName?: string;
  /** A second comparison (e.g. execute() against route()), one ratio per run. */
  also?: { name: string; ratios: number[] };
}

function rows(records: RunRecord[]): Row[] {
  const out: Row[] = [];
  const pairedRatios = (pick: (r: RunRecord) => ArmResult | undefined, base: (r: RunRecord) => ArmResult | undefined): number[] =>
    records.map((r) => pairedRatio(pick(r), base(r))).filter((x): x is number => x !== undefined);
  const add = (
    scenario: string,
    arm: string,
    pick: (r: RunRecord) => ArmResult | undefined,
    base?: (r: RunRecord) => ArmResult | undefined,
    extra: Partial<Row> = {},
  ): void => {
    const results = records.map(pick).filter((r): r is ArmResult => r !== undefined);
    if (results.length === 0) return;
    const row: Row = { scenario, arm, results, ...extra };
    if (base) row.ratios = pairedRatios(pick, base);
    out.push(row);
  };
  for (const id of ['s1', 's2', 's3', 's4'] as const) {
    add(
      id,
      'toolwire route()',
      (r) => r.pairs[id]?.toolwire,
      (r) => r.pairs[id]?.raw,
    );
    add(
      id,
      'toolwire execute()',
      (r) => r.pairs[id]?.execute,
      (r) => r.pairs[id]?.raw,
      {
        also: {
          name: 'route()',
          ratios: pairedRatios(
            (r) => r.pairs[id]?.execute,
            (r) => r.pairs[id]?.toolwire,
          ),
        },
      },
    );
    add(id, 'raw ws', (r) => r.pairs[id]?.raw);
  }
  for (let k = 0; k < 2; k++) {
    add(
      's5',
      'toolwire cat',
      (r) => r.s5?.toolwire[k],
      (r) => r.s5?.floor[k],
    );
    add('s5', 'spawn floor', (r) => r.s5?.floor[k]);
  }
  add('s7', 'toolwire execute+record', (r) => r.s7);
  const doors = Math.max(0, ...records.map((r) => r.door?.door.length ?? 0));
  for (let k = 0; k < doors; k++) {
    add(
      'door',
      'toolwire /mcp',
      (r) => r.door?.door[k],
      (r) => r.door?.sdk[k],
      { baseName: 'SDK' },
    );
    add('door', 'MCP SDK server, tool in-process', (r) => r.door?.sdk[k]);
  }
  const ids = records.find((r) => r.ids)?.ids;
  if (ids) {
    add(
      'ids',
      `/mcp, ${fmt(ids.hosts)} + ${fmt(ids.callers)} identities`,
      (r) => r.ids?.many,
      (r) => r.ids?.one,
      { baseName: '1 + 1' },
    );
    add('ids', '/mcp, 1 + 1 identities', (r) => r.ids?.one);
  }
  return out;
}

const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—';
const mib = (kib: number | undefined): string => (kib === undefined ? '—' : fmt(kib / 1024, 1));

/** A target of issues 4 and 12: a per-run value, judged on its median. */
interface Target {
  name: string;
  op: '≥' | '≤';
  limit: number;
  unit: string;
  value(r: RunRecord): number | undefined;
  /** Digits shown (default: 0 for limits ≥ 100, else 2). */
  digits?: number;
}

const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a / b);
const minus = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a - b);

/**
 * Throughput of `a` relative to `b`: the median over segments of (calls/s of a's segment k) /
 * (calls/s of b's segment k). Segments k of both arms ran back to back, so each pair saw the same
 * machine; the median keeps a burst of outside work in one segment from deciding the ratio.
 */
export function pairedRatio(a: ArmResult | undefined, b: ArmResult | undefined): number | undefined {
  if (!a || !b) return undefined;
  const n = Math.min(a.segmentRates.length, b.segmentRates.length);
  return median(Array.from({ length: n }, (_, k) => a.segmentRates[k]! / b.segmentRates[k]!));
}

const targets: Target[] = [
  { name: 's1 route() throughput', op: '≥', limit: 0.9, unit: '× raw ws', value: (r) => pairedRatio(r.pairs.s1?.toolwire, r.pairs.s1?.raw) },
  { name: 's1 route() p50 latency', op: '≤', limit: 1.2, unit: '× raw ws', value: (r) => ratio(r.pairs.s1?.toolwire.stats.p50Us, r.pairs.s1?.raw.stats.p50Us) },
  { name: 's2 route() throughput', op: '≥', limit: 0.9, unit: '× raw ws', value: (r) => pairedRatio(r.pairs.s2?.toolwire, r.pairs.s2?.raw) },
  { name: 's1 execute() throughput', op: '≥', limit: 0.85, unit: '× route()', value: (r) => pairedRatio(r.pairs.s1?.execute, r.pairs.s1?.toolwire) },
  { name: 's2 execute() throughput', op: '≥', limit: 0.85, unit: '× route()', value: (r) => pairedRatio(r.pairs.s2?.execute, r.pairs.s2?.toolwire) },
  { name: 's2 execute() throughput', op: '≥', limit: 0.8, unit: '× raw ws', value: (r) => pairedRatio(r.pairs.s2?.execute, r.pairs.s2?.raw) },
  { name: 's3 throughput', op: '≥', limit: 0.9, unit: '× raw ws', value: (r) => pairedRatio(r.pairs.s3?.toolwire, r.pairs.s3?.raw) },
  { name: 's4 throughput', op: '≥', limit: 0.9, unit: '× raw ws', value: (r) => pairedRatio(r.pairs.s4?.toolwire, r.pairs.s4?.raw) },
  ...[0, 1].map((k): Target => ({
    name: `s5 cat c=${k === 0 ? 1 : 8} throughput`,
    op: '≥',
    limit: 0.9,
    unit: '× spawn floor',
    value: (r) => pairedRatio(r.s5?.toolwire[k], r.s5?.floor[k]),
  })),
  { name: 's6 server RSS per host', op: '≤', limit: 12, unit: 'KiB', value: (r) => r.s6?.perHostKiB, digits: 1 },
  { name: 's6 first wave connects (10,000 hosts)', op: '≤', limit: 8, unit: 's', value: (r) => r.s6?.firstWaveSeconds, digits: 1 },
  { name: 's6 all hosts connect (19,000)', op: '≤', limit: 15, unit: 's', value: (r) => r.s6?.connectSeconds, digits: 1 },
  { name: 's6 s1 p50, N hosts vs 1', op: '≤', limit: 1.1, unit: '× one host', value: (r) => ratio(r.s6?.all.p50Us, r.s6?.one.p50Us) },
  { name: 's6 hosts lost over 3 heartbeats', op: '≤', limit: 0, unit: 'hosts', value: (r) => r.s6?.lostHosts, digits: 0 },
  { name: 's7 execute+record throughput', op: '≥', limit: 6000, unit: 'calls/s', value: (r) => r.s7?.stats.callsPerSec },
  { name: 'door c=1 throughput', op: '≥', limit: 0.85, unit: '× SDK server', value: (r) => pairedRatio(r.door?.door[0], r.door?.sdk[0]) },
  { name: 'door c=1 p50 over the SDK server', op: '≤', limit: 200, unit: 'µs', value: (r) => minus(r.door?.door[0]?.stats.p50Us, r.door?.sdk[0]?.stats.p50Us) },
  { name: 'door c=16 throughput', op: '≥', limit: 0.95, unit: '× SDK server', value: (r) => pairedRatio(r.door?.door[1], r.door?.sdk[1]) },
  { name: 'door with 10,000 + 1,000 identities', op: '≥', limit: 0.95, unit: '× with 1 + 1', value: (r) => pairedRatio(r.ids?.many, r.ids?.one) },
  {
    name: 'failed upgrade, server CPU over a bare node:http 401',
    op: '≤',
    limit: 20,
    unit: 'µs',
    value: (r) => r.ids?.failedUpgradeCpuUs.overFloor,
    digits: 1,
  },
  { name: `mcp c=8 throughput (${FS_LABEL})`, op: '≥', limit: 0.7, unit: '× SDK client', value: (r) => r.mcp?.filesystem?.c8Ratio },
  { name: `mcp c=1 p50 ÷ (1.5 × SDK client p50 + 300 µs) (${FS_LABEL})`, op: '≤', limit: 1, unit: '×', value: (r) => r.mcp?.filesystem?.p50Budget, digits: 2 },
  { name: `mcp c=8 throughput (${FAKE_LABEL})`, op: '≥', limit: 0.7, unit: '× SDK client', value: (r) => r.mcp?.c8Ratio },
  { name: `mcp c=1 p50 ÷ (1.5 × SDK client p50 + 300 µs) (${FAKE_LABEL})`, op: '≤', limit: 1, unit: '×', value: (r) => r.mcp?.p50Budget, digits: 2 },
];

export interface Judged {
  name: string;
  values: number[];
  median: number;
  op: string;
  limit: number;
  unit: string;
  digits: number;
  holds: boolean;
}

export function judge(records: RunRecord[]): Judged[] {
  const out: Judged[] = [];
  for (const t of targets) {
    const values = records.map((r) => t.value(r)).filter((v): v is number => v !== undefined);
    if (values.length === 0) continue;
    const m = median(values);
    const digits = t.digits ?? (t.limit >= 100 ? 0 : 2);
    out.push({ name: t.name, values, median: m, op: t.op, limit: t.limit, unit: t.unit, digits, holds: t.op === '≥' ? m >= t.limit : m <= t.limit });
  }
  return out;
}

function table(header: string[], body: string[][], markdown: boolean): string {
  if (markdown) {
    const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
    return [line(header), line(header.map((_, i) => (i < 2 ? '---' : '---:'))), ...body.map(line)].join('\n');
  }
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const yesNo = (b: { server: boolean; host?: boolean }): string =>
  b.host === undefined ? (b.server ? 'yes' : 'no') : `${b.server ? 'yes' : 'no'}/${b.host ? 'yes' : 'no'}`;

/** The measurement table (medians over runs), the s6 table and the targets. */
export function render(records: RunRecord[], markdown: boolean): string {
  const n = records.length;
  const all = rows(records);
  const body = all.map(({ scenario, arm, results, ratios, baseName, also }) => {
    const shape: LoadShape = results[0]!.shape;
    const vs = [
      ratios && ratios.length > 0 ? `${fmt(median(ratios), 2)} ×${baseName ? ` ${baseName}` : ''}` : '',
      also && also.ratios.length > 0 ? `${fmt(median(also.ratios), 2)} × ${also.name}` : '',
    ].filter((x) => x !== '');
    return [
      `${scenario} ${shapeLabel(shape)}`,
      arm,
      fmt(median(results.map((r) => r.stats.callsPerSec))),
      vs.join(', '),
      fmt(median(results.map((r) => r.stats.p50Us))),
      fmt(median(results.map((r) => r.stats.p99Us))),
      `${fmt(median(results.map((r) => r.stats.cpuUsPerCall)), 1)} / ${results[0]!.hostCpuUsPerCall === undefined ? '—' : fmt(median(results.map((r) => r.hostCpuUsPerCall!)), 1)}`,
      mib(median(results.map((r) => r.serverPeakRssKiB))),
      results[0]!.hostPeakRssKiB === undefined ? '—' : mib(median(results.map((r) => r.hostPeakRssKiB!))),
      yesNo(results[0]!.bufferutil),
    ];
  });
  const parts: string[] = [];
  if (body.length > 0)
    parts.push(
      `Measurements (median of ${n} run${n === 1 ? '' : 's'}; "vs base": toolwire's calls/s over the baseline's (raw ws, the spawn floor, the MCP SDK's server, or the door with 1 + 1 identities), paired segments; CPU time per call and peak RSS of the server-role and host-role process (door rows: not of the MCP client process that runs their load); the host's CPU includes its spawn helper's, which runs s5's tools):`,
      table(['scenario', 'arm', 'calls/s', 'vs base', 'p50 µs', 'p99 µs', 'CPU µs/call srv / host', 'server MiB', 'host MiB', 'bufferutil'], body, markdown),
    );
  const s6 = records.map((r) => r.s6).filter((x): x is ManyHostsResult => x !== undefined);
  if (s6.length > 0) {
    const m = (f: (x: ManyHostsResult) => number, d = 0): string => fmt(median(s6.map(f)), d);
    parts.push(
      '',
      `s6: ${fmt(s6[0]!.hosts)} hosts × 10 tools over ${s6[0]!.hostProcesses + 1} host processes, server from ${s6[0]!.serverCode ?? 'src'} (median of ${s6.length}):`,
      table(
        ['quantity', 'unit', 'value'],
        [
          ['server RSS, fresh (0 hosts)', 'MiB', m((x) => x.rss0KiB / 1024, 1)],
          ['server RSS, 1 host after s1', 'MiB', m((x) => x.rssOneKiB / 1024, 1)],
          [`server RSS, ${s6[0]!.hosts} hosts`, 'MiB', m((x) => x.rssAllKiB / 1024, 1)],
          ['per host (all − one)/(N − 1)', 'KiB', m((x) => x.perHostKiB, 1)],
          ['per host (all − fresh)/N', 'KiB', m((x) => x.perHostNaiveKiB, 1)],
          ['identities configured (host + caller)', '', `${fmt(s6[0]!.identities.hosts)} + ${fmt(s6[0]!.identities.callers)}`],
          [`time to connect and advertise the first ${fmt(s6[0]!.firstWave)}`, 's', m((x) => x.firstWaveSeconds, 1)],
          [`time to connect and advertise all ${fmt(s6[0]!.hosts)}`, 's', m((x) => x.connectSeconds, 1)],
          ['server CPU while they connected', 's', m((x) => x.connectServerCpuSeconds, 1)],
          ["host processes' CPU meanwhile (the load generator)", 's', m((x) => x.connectHostCpuSeconds ?? Number.NaN, 1)],
          [`hosts lost while held (heartbeat ${fmt(s6[0]!.heartbeatMs)} ms)`, 'hosts / s', `${m((x) => x.lostHosts)} / ${m((x) => x.heldSeconds)}`],
          ['s1 p50 / p99, 1 host', 'µs', `${m((x) => x.one.p50Us)} / ${m((x) => x.one.p99Us)}`],
          [`s1 p50 / p99, ${s6[0]!.hosts} hosts`, 'µs', `${m((x) => x.all.p50Us)} / ${m((x) => x.all.p99Us)}`],
          ['s1 calls/s, 1 host / N hosts', 'calls/s', `${m((x) => x.one.callsPerSec)} / ${m((x) => x.all.callsPerSec)}`],
        ],
        markdown,
      ),
    );
  }
  const ids = records.map((r) => r.ids).filter((x): x is IdsResult => x !== undefined);
  if (ids.length > 0) {
    const statuses = Object.entries(ids[0]!.failedUpgradeStatuses)
      .map(([k, v]) => `${fmt(v)} × ${k}`)
      .join(', ');
    parts.push(
      '',
      `Failed host upgrades (a token nobody has, 8 at a time; median of ${ids.length}): server CPU ${fmt(median(ids.map((x) => x.failedUpgradeCpuUs.many)), 1)} µs each with ` +
        `${fmt(ids[0]!.hosts)} + ${fmt(ids[0]!.callers)} identities, ${fmt(median(ids.map((x) => x.failedUpgradeCpuUs.one)), 1)} µs with 1 + 1, ` +
        `${fmt(median(ids.map((x) => x.failedUpgradeCpuUs.floor)), 1)} µs on a bare node:http server that answers every upgrade 401; ` +
        `toolwire's own part (with ${fmt(ids[0]!.hosts)} + ${fmt(ids[0]!.callers)} identities, over the bare server, paired segments) ${fmt(median(ids.map((x) => x.failedUpgradeCpuUs.overFloor)), 1)} µs (answers: ${statuses}).`,
    );
  }
  // Warm-up check: an arm still warming up would run its first measured segment slower than the rest.
  const warm = all
    .map((row) => ({ row, v: median(row.results.map((r) => (r.segmentRates.length > 1 ? r.segmentRates[0]! / median(r.segmentRates) : Number.NaN))) }))
    .filter((x) => Number.isFinite(x.v));
  if (warm.length > 0) {
    parts.push(
      '',
      `Warm-up check (first measured segment's calls/s ÷ the median segment's, median over runs; well under 1 would mean the arm was still warming up): ` +
        warm.map(({ row, v }) => `${row.scenario} ${shapeLabel(row.results[0]!.shape)} ${row.arm} ${fmt(v, 2)}`).join('; '),
    );
  }
  const cli = records.map((r) => r.cli).filter((x): x is CliResult => x !== undefined);
  if (cli.length > 0) parts.push('', renderCli(cli));
  const abuse = records.map((r) => r.abuse).filter((x): x is AbuseResult => x !== undefined);
  if (abuse.length > 0) parts.push('', renderAbuse(abuse));
  const mcp = records.map((r) => r.mcp).filter((x): x is McpResult => x !== undefined);
  if (mcp.length > 0)
    parts.push(
      '',
      renderMcp(mcp, (header, rows) => table(header, rows, markdown)),
    );
  const judged = judge(records);
  if (judged.length > 0)
    parts.push(
      '',
      `Targets (median of the per-run values):`,
      table(
        ['target', 'runs', 'median', 'limit', 'holds'],
        judged.map((j) => [
          j.name,
          j.values.map((v) => fmt(v, j.digits)).join(' '),
          `${fmt(j.median, j.digits)} ${j.unit}`,
          `${j.op} ${fmt(j.limit, j.digits)}`,
          j.holds ? 'yes' : 'NO',
        ]),
        markdown,
      ),
    );
  return parts.join('\n');
}
