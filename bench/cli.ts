/**
 * The `cli` scenario (`pnpm bench --only cli`): start-up time and idle memory of the installed form
 * of toolwire — the built `packages/cli/dist/toolwire.cjs` (the installed binary) on plain `node`, no TypeScript loader.
 *
 * - wall time of `node -e 0`, `toolwire --version`, and `toolwire call` of a trivial in-process
 *   tool against a running server (medians over `runs` runs each, interleaved so a slow phase of
 *   the machine hits all three alike); times are also given as ratios to `node -e 0`;
 * - idle RSS (and private memory: what the process does not share with other `node` processes, such
 *   as the node binary's own pages) of `toolwire host --manifest examples/tools.json` once it has
 *   connected and advertised, of `toolwire serve` with that one host connected (no call yet), and
 *   of the host's spawn helper after the host ran a subprocess call (the helper starts then); the
 *   server's RSS after the timed calls is reported too (its MCP door is loaded on first use).
 *
 * Builds the packages first (`pnpm build`).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from './helpers.js';

const CLI = join(repoRoot, 'packages', 'cli', 'dist', 'toolwire.cjs');
const ECHO_HOST = join(repoRoot, 'bench', 'proc', 'cli-echo-host.mjs');
const MANIFEST = join(repoRoot, 'examples', 'tools.json');

/** Results of one `cli` scenario run. Times in ms, memory in MiB. */
export interface CliResult {
  runs: number;
  nodeMs: number;
  versionMs: number;
  callMs: number;
  hostRssMiB: number;
  hostPrivateMiB: number;
  helperRssMiB: number;
  helperPrivateMiB: number;
  serveRssMiB: number;
  servePrivateMiB: number;
  /** `toolwire serve` after the timed calls: the MCP door (and the SDK it loads on first use) is up. */
  serveAfterCallsRssMiB: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Run `node ARGS…` to its end; resolves with the wall time in ms. Rejects on a non-zero exit. */
function timed(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code === 0) resolve(ms);
      else reject(new Error(`node ${args.join(' ')} exited ${String(code)}: ${stderr.trim()}`));
    });
  });
}

/** RSS and private memory (Private_Clean + Private_Dirty) of `pid`, MiB, from /proc. */
function memoryOf(pid: number): { rss: number; priv: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
  return { rss: kib('Rss') / 1024, priv: (kib('Private_Clean') + kib('Private_Dirty')) / 1024 };
}

/** Pid of the spawn helper among the children of `pid`, if one runs. */
function spawnHelperOf(pid: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('spawn-helper.cjs')) return Number(entry);
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

/** Start a long-running `node ARGS…`; resolves once a stdout line matches `ready`, with the child and that line. */
function started(args: string[], env: NodeJS.ProcessEnv, ready: RegExp, children: ChildProcess[]): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node ${args.join(' ')}: not ready within 20 s`)), 20_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!ready.test(line)) return;
      clearTimeout(timer);
      resolve({ child, line });
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node ${args.join(' ')} exited ${String(code)} before it was ready`));
    });
  });
}

/** `GET /healthz` of the server on `port`. */
async function health(port: string): Promise<{ hosts?: number; tools?: number }> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    return (await response.json()) as { hosts?: number; tools?: number };
  } catch {
    return {};
  }
}

/** Let a process's start-up garbage be collected and its memory settle before it is read. */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1_000));
}

/** Poll `check` every 50 ms until it is true, at most `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Run the `cli` scenario once with `runs` timed runs per command. */
export async function cliScenario(runs: number): Promise<CliResult> {
  // Always build: a `dist/` left from an earlier checkout would measure old code.
  execFileSync('pnpm', ['build'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  const home = await mkdtemp(join(tmpdir(), 'toolwire-bench-cli-'));
  const children: ChildProcess[] = [];
  try {
    const tokens = { bench: 'bench-host-token-0123456789abcdef', local: 'local-host-token-0123456789abcdef', cli: 'cli-caller-token-0123456789abcdef' };
    const config = join(home, 'server.json');
    await writeFile(
      config,
      JSON.stringify({
        listen: '127.0.0.1:0',
        hosts: [
          { name: 'bench', token: tokens.bench },
          { name: 'local', token: tokens.local },
        ],
        callers: [{ name: 'cli', token: tokens.cli, grant: ['*'] }],
      }),
    );
    const env: NodeJS.ProcessEnv = { ...process.env, TOOLWIRE_HOME: home, TOOLWIRE_LOG_LEVEL: 'warn' };
    delete env.TOOLWIRE_SERVER;
    delete env.TOOLWIRE_TOKEN;
    const serve = await started([CLI, 'serve', '--config', config, '--log-level', 'warn'], env, /listening on/, children);
    const port = /listening on .*:(\d+)/.exec(serve.line)?.[1];
    if (port === undefined) throw new Error(`no port in the banner: ${serve.line}`);
    const ws = `ws://127.0.0.1:${port}`;
    const manifestHost = spawn(process.execPath, [CLI, 'host', '--server', ws, '--manifest', MANIFEST, '--root', repoRoot], {
      env: { ...env, TOOLWIRE_TOKEN: tokens.local },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(manifestHost);
    // Connected and advertised: /healthz counts it (no MCP session is opened, so the server has not
    // loaded the MCP SDK yet: this is the idle server with one host).
    await until(async () => ((await health(port)).tools ?? 0) >= 5, 20_000, 'the manifest host to advertise');
    await settle();
    const hostIdle = memoryOf(manifestHost.pid!);
    const serveIdle = memoryOf(serve.child.pid!);

    await started([ECHO_HOST], { ...env, BENCH_URL: ws, BENCH_TOKEN: tokens.bench }, /^ready$/, children);
    const callerEnv = { ...env, TOOLWIRE_SERVER: `http://127.0.0.1:${port}/mcp`, TOOLWIRE_TOKEN: tokens.cli };
    const call = [CLI, 'call', 'bench__echo', '{"text":"hello"}'];
    await timed([CLI, 'call', 'local__list_dir', '{"path":"."}'], callerEnv); // starts the host's spawn helper
    for (let i = 0; i < 3; i++) await timed(call, callerEnv); // warm the server's MCP door and the page cache

    const node: number[] = [];
    const version: number[] = [];
    const calls: number[] = [];
    for (let i = 0; i < runs; i++) {
      node.push(await timed(['-e', '0'], env));
      version.push(await timed([CLI, '--version'], env));
      calls.push(await timed(call, callerEnv));
    }

    await settle();
    const helperPid = spawnHelperOf(manifestHost.pid!);
    if (helperPid === undefined) throw new Error('the manifest host has no spawn helper after a subprocess call');
    const helper = memoryOf(helperPid);
    const serveAfter = memoryOf(serve.child.pid!);
    return {
      runs,
      nodeMs: median(node),
      versionMs: median(version),
      callMs: median(calls),
      hostRssMiB: hostIdle.rss,
      hostPrivateMiB: hostIdle.priv,
      helperRssMiB: helper.rss,
      helperPrivateMiB: helper.priv,
      serveRssMiB: serveIdle.rss,
      servePrivateMiB: serveIdle.priv,
      serveAfterCallsRssMiB: serveAfter.rss,
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.all(children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => new Promise((resolve) => c.once('exit', resolve))));
    await rm(home, { recursive: true, force: true });
  }
}

/** The `cli` table with its targets (issue 9), markdown or plain. */
export function renderCli(results: CliResult[]): string {
  const med = (pick: (r: CliResult) => number): number => median(results.map(pick));
  const nodeMs = med((r) => r.nodeMs);
  const versionMs = med((r) => r.versionMs);
  const callMs = med((r) => r.callMs);
  const ok = (pass: boolean): string => (pass ? 'holds' : 'MISSED');
  const rows: [string, string, string, string][] = [
    ['`node -e 0`', `${nodeMs.toFixed(0)} ms`, '1.00', '—'],
    ['`toolwire --version`', `${versionMs.toFixed(0)} ms`, (versionMs / nodeMs).toFixed(2), `≤ 2 × node: ${ok(versionMs <= 2 * nodeMs)}`],
    [
      '`toolwire call` (in-process echo)',
      `${callMs.toFixed(0)} ms`,
      (callMs / nodeMs).toFixed(2),
      `≤ 250 ms and ≤ 3 × node: ${ok(callMs <= 250 && callMs <= 3 * nodeMs)}`,
    ],
    [
      '`toolwire host` idle RSS (private)',
      `${med((r) => r.hostRssMiB).toFixed(1)} MiB (${med((r) => r.hostPrivateMiB).toFixed(1)})`,
      '',
      `≤ 60 MiB: ${ok(med((r) => r.hostRssMiB) <= 60)}`,
    ],
    [
      'its spawn helper idle RSS (private)',
      `${med((r) => r.helperRssMiB).toFixed(1)} MiB (${med((r) => r.helperPrivateMiB).toFixed(1)})`,
      '',
      `≤ 40 MiB: ${ok(med((r) => r.helperRssMiB) <= 40)}`,
    ],
    [
      '`toolwire serve` + 1 host idle RSS (private)',
      `${med((r) => r.serveRssMiB).toFixed(1)} MiB (${med((r) => r.servePrivateMiB).toFixed(1)})`,
      '',
      `≤ 80 MiB: ${ok(med((r) => r.serveRssMiB) <= 80)}`,
    ],
    ['`toolwire serve` RSS after the calls', `${med((r) => r.serveAfterCallsRssMiB).toFixed(1)} MiB`, '', '—'],
  ];
  const header = `cli: median of ${results.length} run(s) × ${results[0]?.runs ?? 0} timed runs each; built dist on plain node`;
  const lines = ['| what | figure | × node -e 0 | target |', '|---|---:|---:|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)];
  return `${header}\n\n${lines.join('\n')}`;
}
