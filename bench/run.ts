/**
 * `pnpm bench [--quick] [--runs N] [--only s1,s2,…,door,ids,cli,live,live-<arm>,cluster,abuse] [--markdown] [--observe] [--no-rewarm]` — toolwire's router
 * and executor paths against a raw-WebSocket RPC baseline, side by side in the same run (issues 4
 * and 12), the MCP door against the MCP SDK's own server (`door`) and with many identities (`ids`),
 * a fleet of hosts on one server (`s6`), the installed CLI's start-up time and idle memory (`cli`,
 * issue 9: see `cli.ts`), live output's streaming throughput (`live`, issue 13), and what one
 * abusive host costs the others (`abuse`, issue 11: see `abuse.ts`; not in the default set). Prints
 * the table of medians and the targets; writes JSON lines to `bench/results/<time>.jsonl` and the
 * table to `bench/results/latest.md`. `--observe` (issue 16): s1–s4 compare the same build through
 * `execute()` with info logging and metrics off (`toolwire-execute`) and on (`toolwire+obs`) instead of the baseline.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile, appendFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Arm, type ArmResult, compare, startRaw, startSpawnFloor, startToolwire, stopArm } from './arms.js';
import { abuseScenario } from './abuse.js';
import { cliScenario } from './cli.js';
import { LIVE_ARMS, type LiveArm, liveReport, liveScenario } from './live.js';
import { doorScenario, idsScenario } from './door.js';
import { mcpLine } from './mcp-report.js';
import { mcpScenario } from './mcp-source.js';
import { clusterScale, clusterScenario, segmentRatio } from './cluster.js';
import { benchDir, pinServers, stopAll } from './helpers.js';
import { manyHosts } from './many-hosts.js';
import { jsonLines, machine, render, type RunRecord } from './report.js';
import { fullPlan, quickPlan, scalePlan, shapeLabel } from './scenarios.js';

/** True when `taskset` (util-linux) can be run. */
function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    runs: { type: 'string' },
    only: { type: 'string' },
    markdown: { type: 'boolean', default: false },
    arms: { type: 'string' },
    scale: { type: 'string' },
    'record-dir': { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    'no-rewarm': { type: 'boolean', default: false },
    observe: { type: 'boolean', default: false },
  },
});
const quick = values.quick;
// --scale X multiplies every call count (e.g. a long run to profile); --arms toolwire|execute|raw
// runs some arms of s1–s4 only (execute: s1 and s2); --no-rewarm times each segment right after its
// full GC (no untimed re-warm calls first: bench/README.md, "Method").
const plan = scalePlan(quick ? quickPlan : fullPlan, Number(values.scale ?? 1), !values['no-rewarm']);
const arms = (values.arms ?? 'toolwire,execute,raw').split(',');
const runs = Number(values.runs ?? (quick ? 1 : 3));
if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`--runs must be a positive integer, got ${values.runs}`);
const only = new Set((values.only ?? 's1,s2,s3,s4,s5,s6,s7,door,ids,cli').split(',').map((s) => s.trim()));
const wanted = (id: string): boolean => only.has(id);

// s7's records go to tmpfs when there is one (/dev/shm), so the figure is toolwire's cost and not that
// of a disk shared with other work; --record-dir DIR picks another place (e.g. /tmp, on disk here).
const recordRoot = values['record-dir'] ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());

// The server-role processes run on CPU 0 (`taskset`), when there are 2+ CPUs and taskset exists
// (bench/README.md, "Method"); --no-pin lets the scheduler place them.
const pinned = !values['no-pin'] && cpus().length >= 2 && hasTaskset() ? '0' : undefined;
pinServers(pinned);

const resultsDir = join(benchDir, 'results');
await mkdir(resultsDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const resultsFile = join(resultsDir, `${stamp}${quick ? '-quick' : ''}.jsonl`);
const meta = { time: new Date().toISOString(), quick, machine: machine(), recordRoot, serverCpu: pinned ?? null };
const log = (text: string): void => void process.stderr.write(`${text}\n`);
const t0 = Date.now();

process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));

const brief = (r: ArmResult): string =>
  `${r.arm.padEnd(12)} ${shapeLabel(r.shape).padEnd(12)} ${Math.round(r.stats.callsPerSec).toString().padStart(7)} calls/s  p50 ${Math.round(r.stats.p50Us)} µs  p99 ${Math.round(r.stats.p99Us)} µs` +
  `  CPU ${r.stats.cpuUsPerCall.toFixed(1)} / ${r.hostCpuUsPerCall === undefined ? '—' : r.hostCpuUsPerCall.toFixed(1)} µs per call (server / host)`;

const records: RunRecord[] = [];
try {
  for (let run = 1; run <= runs; run++) {
    const record: RunRecord = { run, pairs: {} };
    for (const id of ['s1', 's2', 's3', 's4'] as const) {
      if (!wanted(id)) continue;
      const live: Arm[] = [];
      try {
        if (values.observe) {
          // --observe (issue 16): the same build with info logging and metrics off, then on, through
          // execute() (where the server's call line and metrics are), in interleaved segments.
          live.push(await startToolwire('echo', { path: 'execute' }), await startToolwire('echo', { path: 'execute', observe: true }));
        } else {
          if (arms.includes('toolwire')) live.push(await startToolwire('echo'));
          // executor.execute() with no record dir and no tool control, beside route() (issue 12)
          if (arms.includes('execute') && (id === 's1' || id === 's2')) live.push(await startToolwire('echo', { path: 'execute' }));
          if (arms.includes('raw')) live.push(await startRaw());
        }
        const results = await compare(live, plan[id]);
        const off = results.find((r) => r.arm === 'toolwire-execute');
        const on = results.find((r) => r.arm === 'toolwire+obs');
        if (off && on) {
          // Under load from other work, the CPU time per call (same process roles, same calls) is the steadier figure.
          const cpu = (r: ArmResult): string => `${r.stats.cpuUsPerCall.toFixed(1)} / ${(r.hostCpuUsPerCall ?? 0).toFixed(1)}`;
          log(
            `run ${run} ${id}: observability on/off = ${(on.stats.callsPerSec / off.stats.callsPerSec).toFixed(3)} (calls/s), ` +
              `${segmentRatio(on, off).toFixed(3)} (median of paired segments); CPU µs/call srv / host off ${cpu(off)}, on ${cpu(on)}`,
          );
        }
        for (const r of results) log(`run ${run} ${id}: ${brief(r)}`);
        const toolwire = results.find((r) => r.arm === 'toolwire');
        const execute = results.find((r) => r.arm === 'toolwire-execute');
        const raw = results.find((r) => r.arm === 'raw-ws');
        if (toolwire && raw) record.pairs[id] = { toolwire, raw, ...(execute && { execute }) };
      } finally {
        await Promise.all(live.map(stopArm));
      }
    }
    if (wanted('s5')) {
      const live: Arm[] = [];
      try {
        live.push(await startToolwire('cat'), await startSpawnFloor());
        const toolwire: ArmResult[] = [];
        const floor: ArmResult[] = [];
        for (const shape of plan.s5) {
          const [t, f] = await compare(live, shape);
          toolwire.push(t!);
          floor.push(f!);
          log(`run ${run} s5: ${brief(t!)}\n             ${brief(f!)}`);
        }
        record.s5 = { toolwire, floor };
      } finally {
        await Promise.all(live.map(stopArm));
      }
    }
    if (wanted('s6')) {
      record.s6 = await manyHosts(plan.s6);
      const s6 = record.s6;
      log(
        `run ${run} s6: ${s6.hosts} hosts, ${s6.perHostKiB.toFixed(1)} KiB/host, connect ${s6.firstWave} in ${s6.firstWaveSeconds.toFixed(1)} s, ` +
          `all in ${s6.connectSeconds.toFixed(1)} s, p50 ${Math.round(s6.one.p50Us)} → ${Math.round(s6.all.p50Us)} µs, ${s6.lostHosts} lost over ${s6.heldSeconds.toFixed(0)} s`,
      );
    }
    if (wanted('s7')) {
      const recordDir = await mkdtemp(join(recordRoot, 'toolwire-bench-record-'));
      let arm: Arm | undefined;
      try {
        arm = await startToolwire('echo', { path: 'execute', recordDir });
        record.s7 = (await compare([arm], plan.s7))[0]!;
      } finally {
        await stopArm(arm);
        await rm(recordDir, { recursive: true, force: true });
      }
      log(`run ${run} s7: ${brief(record.s7)}`);
    }
    const liveArms = new Set<LiveArm>(LIVE_ARMS.filter((arm) => wanted('live') || wanted(`live-${arm}`)));
    if (liveArms.size > 0) {
      // Not in the default set (about three minutes): `--only live`, or one arm: `--only live-throughput,live-big`.
      const l = await liveScenario(quick, liveArms);
      log(liveReport(run, l));
      await appendFile(resultsFile, `${JSON.stringify({ ...meta, run, scenario: 'live', ...l })}\n`);
    }
    if (wanted('door')) record.door = await doorScenario(plan.door, (line) => log(`run ${run} ${line}`));
    if (wanted('ids')) record.ids = await idsScenario(plan.ids, (line) => log(`run ${run} ${line}`));
    if (wanted('mcp')) {
      // Not in the default set: `--only mcp` (issue 14).
      record.mcp = await mcpScenario(quick ? 1 : 3, quick ? 500 : 2000);
      log(`run ${run} mcp: ${mcpLine(record.mcp)}`);
    }
    if (wanted('cluster')) {
      // Not in the default set: `--only cluster` (issue 17; needs nats-server).
      // Each segment's GC is followed by an untimed re-warm as in s1/s2 (bench/README.md, "Method"):
      // the segments (500 calls at c=1) would otherwise run mostly code the GC de-optimised.
      const rewarm = !values['no-rewarm'];
      const c1 = { concurrency: 1, bytes: 100, count: quick ? 1_000 : 5_000, warmup: quick ? 2_000 : 5_000, ...(rewarm ? { rewarm: quick ? 500 : 2_500 } : {}) };
      const c64 = {
        concurrency: 64,
        bytes: 100,
        count: quick ? 5_000 : 30_000,
        warmup: quick ? 5_000 : 10_000,
        ...(rewarm ? { rewarm: quick ? 2_000 : 5_000 } : {}),
      };
      const c = await clusterScenario([c1, c64]);
      // CPU µs per call of every process of an arm: node a, node b, nats-server, the host.
      const perProcess = (r: ArmResult): Record<string, number> => ({ ...r.watchCpuUsPerCall, host: r.hostCpuUsPerCall ?? 0 });
      const cpuLine = (r: ArmResult): string =>
        Object.entries(perProcess(r))
          .map(([name, us]) => `${name} ${us.toFixed(0)}`)
          .join(', ');
      // Each process on a machine of its own, the busiest one bounds calls/s: 1 / its CPU per call.
      const boundRatio = (a: ArmResult, b: ArmResult): number => Math.max(...Object.values(perProcess(b))) / Math.max(...Object.values(perProcess(a)));
      for (const { same, cross, floor } of c.shapes) {
        const line = `run ${run} cluster ${shapeLabel(same.shape)} (pin ${c.pin}): same node ${brief(same)}\n${' '.repeat(12)}across nodes ${brief(cross)}\n${' '.repeat(12)}NATS floor ${brief(floor)}`;
        log(
          `${line}\n             p50 +${Math.round(cross.stats.p50Us - same.stats.p50Us)} µs, calls/s ${segmentRatio(cross, same).toFixed(2)} × same node; NATS floor p50 ${Math.round(floor.stats.p50Us)} µs` +
            `\n             CPU µs/call same: ${cpuLine(same)}; across: ${cpuLine(cross)}; floor: ${cpuLine(floor)}` +
            `; with each process on a machine of its own, calls/s bound across / same ${boundRatio(cross, same).toFixed(2)}`,
        );
      }
      await appendFile(
        resultsFile,
        `${JSON.stringify({
          ...meta,
          run,
          scenario: 'cluster',
          pin: c.pin,
          shapes: c.shapes.map((x) => ({
            shape: x.same.shape,
            same: x.same.stats,
            cross: x.cross.stats,
            floor: x.floor.stats,
            ratio: segmentRatio(x.cross, x.same),
            boundRatio: boundRatio(x.cross, x.same),
            cpuUsPerCall: { same: perProcess(x.same), cross: perProcess(x.cross), floor: perProcess(x.floor) },
          })),
        })}\n`,
      );
    }
    if (wanted('cluster-scale')) {
      // Not in the default set: `--only cluster-scale` (issue 17; needs nats-server and ~3 × hosts file descriptors).
      const perNode = Number(process.env.BENCH_CLUSTER_HOSTS ?? (quick ? 300 : 3_000));
      const k = await clusterScale(perNode, { concurrency: 1, bytes: 100, count: quick ? 1_000 : 3_000, warmup: quick ? 2_000 : 5_000 });
      log(
        `run ${run} cluster-scale (nodes from ${k.serverCode}): 3 nodes × ${perNode} hosts: every node lists every tool ${k.convergeSeconds.toFixed(1)} s after the last connect; ` +
          `RSS per host ${k.rss.map((r) => `${r.node} ${r.perClusterHostKiB.toFixed(1)} KiB (${r.perLocalHostKiB.toFixed(1)} per local host)`).join(', ')}; ` +
          `heap used per host ${k.heap.map((h) => `${h.node} ${h.perClusterHostKiB.toFixed(1)} KiB`).join(', ')}; ` +
          `RSS less V8's unused committed heap per host ${k.rssLessHeapSlack.map((h) => `${h.node} ${h.perClusterHostKiB.toFixed(1)} KiB`).join(', ')}; ` +
          `node CPU during the connects ${k.stormCpuSeconds.map((c) => `${c.node} ${c.seconds.toFixed(1)} s`).join(', ')}; ` +
          `cross-node s1 p50 ${Math.round(k.few.stats.p50Us)} → ${Math.round(k.all.stats.p50Us)} µs (${(k.all.stats.p50Us / k.few.stats.p50Us).toFixed(2)} ×)`,
      );
      await appendFile(resultsFile, `${JSON.stringify({ ...meta, run, scenario: 'cluster-scale', ...k, few: k.few.stats, all: k.all.stats })}\n`);
    }
    if (wanted('cli')) {
      record.cli = await cliScenario(quick ? 5 : 15);
      const c = record.cli;
      log(
        `run ${run} cli: node -e 0 ${c.nodeMs.toFixed(0)} ms, --version ${c.versionMs.toFixed(0)} ms, call ${c.callMs.toFixed(0)} ms; ` +
          `idle RSS host ${c.hostRssMiB.toFixed(1)} MiB, helper ${c.helperRssMiB.toFixed(1)} MiB, serve ${c.serveRssMiB.toFixed(1)} MiB`,
      );
    }
    if (wanted('abuse')) record.abuse = await abuseScenario((line) => log(`run ${run} ${line}`));
    records.push(record);
    await appendFile(resultsFile, `${jsonLines(record, meta).join('\n')}\n`);
  }
} finally {
  await stopAll();
}

const m = meta.machine;
const heading =
  `toolwire bench${quick ? ' --quick' : ''}: ${runs} run${runs === 1 ? '' : 's'}; ${m.cpu}, ${m.cores} cores, ${m.memGiB} GiB, ` +
  `Linux ${m.kernel}, Node ${m.node}; s7 records under ${recordRoot}; ` +
  (pinned === undefined ? 'processes not pinned' : `server-role processes pinned to CPU ${pinned}`);
const text = `${heading}\n\n${render(records, values.markdown)}\n`;
process.stdout.write(text);
await writeFile(join(resultsDir, quick ? 'latest-quick.md' : 'latest.md'), `${heading}\n\n${render(records, true)}\n`);
log(`\nresults: ${resultsFile}\nwall time: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
