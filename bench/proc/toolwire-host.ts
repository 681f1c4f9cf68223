/**
 * Bench helper: `BENCH_COUNT` real `ToolHost`s (default 1) in this process, identities
 * `BENCH_FIRST` … `BENCH_FIRST + BENCH_COUNT − 1`, each advertising 10 tools: `echo` (in-process,
 * stdout = the input JSON), `cat` (subprocess, stdout = stdin = the input JSON) and 8 fillers.
 */
import { readFileSync } from 'node:fs';
import { ToolHost, type ToolHostOptions } from '@toolwire/client';
import { reaperPid } from '../../packages/client/src/subprocess/reaper.js';
import { spawnHelperPid } from '../../packages/client/src/subprocess/spawn-helper.js';
import { processInfo, send, serve } from './ipc.js';
import { FILLERS, fillerSchema, hostToken } from './tools.js';
import { infoLogger, observing } from './observe.js';

const server = process.env.BENCH_URL!;
const first = Number(process.env.BENCH_FIRST ?? 0);
const count = Number(process.env.BENCH_COUNT ?? 1);
/** Dials in flight at once when starting many hosts. */
const BATCH = 50;
// One logger for every host of this process (the default opens one stderr stream per host).
const warn = (obj: unknown, msg?: string): void => console.error('bench host:', msg ?? '', typeof obj === 'string' ? obj : JSON.stringify(obj));
const logger = observing ? infoLogger() : ({ debug() {}, info() {}, warn, error: warn } as unknown as NonNullable<ToolHostOptions['logger']>);
const object = { type: 'object' } as const;

/** Live-output scenario (`bench/live.ts`): the shell command of the `flood` tool, when set. */
const flood = process.env.BENCH_FLOOD;

function makeHost(i: number): ToolHost {
  const host = new ToolHost({ server, token: hostToken(i), reconnect: false, logger });
  host.tool('echo', { description: 'stdout = the input JSON', inputSchema: object }, (input) => JSON.stringify(input));
  host.command('cat', { description: 'stdout = stdin', inputSchema: object, command: ['cat'] });
  if (flood !== undefined) host.command('flood', { description: 'writes a lot of stdout', inputSchema: object, command: ['sh', '-c', flood] });
  for (let k = 0; k < FILLERS; k++) {
    host.tool(`tool${k}`, { description: `filler tool ${k}`, inputSchema: fillerSchema(k) }, () => '');
  }
  return host;
}

const hosts: ToolHost[] = [];
/** Hosts of this process that closed after they had connected (with `reconnect: false` they stay gone). */
let lost = 0;

/** Start every host of this process, `BATCH` dials at a time. */
async function startAll(): Promise<void> {
  for (let start = 0; start < count; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - start) }, (_, k) => makeHost(first + start + k));
    hosts.push(...batch);
    await Promise.all(batch.map((h) => h.start()));
    for (const h of batch) h.once('disconnected', () => lost++);
  }
}

/** CPU time of `pid` (µs, user + system, 10 ms ticks); 0 when it is gone. */
function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields 3… of proc(5)
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime (fields 14, 15)
  } catch {
    return 0;
  }
}

// BENCH_CONNECT=command: start the hosts on the `connect` command (s6 times the connect storm
// without the process start-up); otherwise at once, before `ready`.
if (process.env.BENCH_CONNECT !== 'command') await startAll();

/**
 * CPU (µs) and RSS (KiB) of this process's spawn helper, which spawns the subprocess tools (s5),
 * plus the CPU of its orphan reaper: their CPU counts as the host's, since they do the host's work.
 */
function helperUsage(): { helperCpuUs: number; helperRssKiB: number; helperPeakRssKiB: number } {
  const pid = spawnHelperPid();
  const reaper = cpuUs(reaperPid());
  if (pid === undefined) return { helperCpuUs: reaper, helperRssKiB: 0, helperPeakRssKiB: 0 };
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { helperCpuUs: cpuUs(pid) + reaper, helperRssKiB: kib('VmRSS'), helperPeakRssKiB: kib('VmHWM') };
  } catch {
    return { helperCpuUs: reaper, helperRssKiB: 0, helperPeakRssKiB: 0 };
  }
}

serve(async (command) => {
  if (command.cmd === 'info') {
    const own = processInfo();
    const helper = helperUsage();
    return { ...own, ...helper, cpuUs: own.cpuUs + helper.helperCpuUs, hosts: hosts.length, lost };
  }
  if (command.cmd === 'connect') {
    await startAll();
    return { hosts: hosts.length };
  }
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready', hosts: hosts.length });
