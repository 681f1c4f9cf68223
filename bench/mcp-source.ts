/**
 * `pnpm bench --only mcp` (issue 14): a call to a tool of a stdio MCP server through toolwire
 * (server → tool host process → MCP server → back; the server in this process, the host a
 * `toolwire host --mcp-config` process) against the same MCP server called directly by an MCP SDK
 * client in this process (the floor of that server). Two MCP servers, each its own pair of arms:
 * - the tests' fake (`packages/client/test/fixtures/mcp-fake.mjs`), its `echo` tool: a server that
 *   does no work per call, so its floor is as fast as an MCP exchange gets and toolwire's ratio to
 *   it is the worst case;
 * - the published `@modelcontextprotocol/server-filesystem` (the dev dependency of the tests), its
 *   `read_text_file` tool reading one small file in a temp dir of the scenario: a real server whose
 *   result carries `structuredContent` (its tools have an `outputSchema`).
 * Both arms speak to each server over stdio pipes (JSON lines), the floor through the SDK's
 * `StdioClientTransport`; one host runs both servers (one `.mcp.json`). The floor lists no tools, so
 * its SDK client validates no `structuredContent` (the cheapest SDK client; toolwire's host does not
 * validate it either). For c = 1 and c = 8: calls/s over `calls` calls (the filesystem server's
 * arms: half as many, as its calls take a few times longer), the p50 latency, and the CPU
 * time per call of each process (this process — the SDK client of the floor, the server of
 * toolwire —, the host, the MCP server). Each round runs fake floor / fake toolwire / ceiling /
 * filesystem floor / filesystem toolwire; a c = 8 ratio is the median of the rounds' ratios (each
 * pair ran back to back), the other figures are medians over rounds.
 *
 * The ceiling arm is toolwire's own path without the MCP server: the same server and executor → a
 * tool host process (`proc/toolwire-host.ts`) → its in-process `echo` tool. It bounds what an MCP
 * arm can reach on the machine at hand: the MCP arm is that path plus a third process and its hop.
 * In series: a call of the MCP arm goes through the ceiling's path and then through an MCP client →
 * server exchange like the floor's, and at a fixed number of calls in flight (closed loop) the two
 * latencies add, so its calls/s are at most about 1 / (1 / floor + 1 / ceiling), i.e. ceiling ÷
 * (floor + ceiling) × the floor's. The series figures put each round's MCP arm against that bound:
 * what is left below it is the host's own MCP work and the third process's share of the CPUs.
 *
 * BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`) goes to the host and to every MCP server.
 * BENCH_MCP_SETSID=1 starts the floors' MCP servers through `setsid` (in a session of their own, as
 * the host starts its servers: `detached`), to see what the session costs on the machine at hand.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolwireServer } from '@toolwire/server';
import { type McpArm, type Pids, type Round, childWith, measure, median, medianArm } from './mcp-drive.js';
import { hostToken } from './proc/tools.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
const FAKE = join(repo, 'packages', 'client', 'test', 'fixtures', 'mcp-fake.mjs');
const FS_PKG = join(repo, 'packages', 'client', 'node_modules', '@modelcontextprotocol', 'server-filesystem');
const FS_BIN = join(FS_PKG, 'dist', 'index.js');
const CLI = join(repo, 'packages', 'cli', 'src', 'main.ts');
const HOST_TOKEN = 'bench-host-token-aaaaaaaaaaaaaaaaaaaa';

export type { McpArm, McpCpu } from './mcp-drive.js';

/** One MCP server's two arms: its floor and toolwire's path to it, and how they compare. */
export interface McpPair {
  floor: McpArm;
  toolwire: McpArm;
  /** Median over rounds of toolwire c8 calls/s ÷ the floor's in the same round (target ≥ 0.7). */
  c8Ratio: number;
  /** The rounds' c8 ratios. */
  c8Ratios: number[];
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

/** The published server's pair, and what it was asked. */
export interface McpFilesystemPair extends McpPair {
  /** `@modelcontextprotocol/server-filesystem@<version>`. */
  server: string;
  /** The tool called, by its name on the MCP server. */
  tool: string;
  /** Calls per concurrency per round: half the fake's (a call costs the server a few times the fake's; wall time). */
  calls: number;
  /** Size of the file it reads, bytes. */
  fileBytes: number;
}

/**
 * The scenario's figures. The pair's own fields are the zero-work fake's (the only server of the
 * results before session 12); `filesystem` is the published server's.
 */
export interface McpResult extends McpPair {
  rounds: number;
  calls: number;
  /** Toolwire's own path, no MCP server: server → host process → in-process echo. */
  ceiling?: McpArm;
  /** Median over rounds of the ceiling's c8 calls/s ÷ the fake floor's in the same round (no target: the bound of {@link c8Ratio}). */
  ceilingC8Ratio?: number;
  filesystem?: McpFilesystemPair;
}

/** The pair's figures from its rounds and the ceiling's (round i of each ran back to back). */
function pairOf(floors: Round[], toolwires: Round[], ceilings: Round[]): McpPair {
  const f = medianArm(floors);
  const t = medianArm(toolwires);
  const c8Ratios = toolwires.map((r, i) => r.c8.perSec / floors[i]!.c8.perSec);
  const series = (i: number): number => 1 / (1 / floors[i]!.c8.perSec + 1 / ceilings[i]!.c8.perSec);
  return {
    floor: f,
    toolwire: t,
    c8Ratio: median(c8Ratios),
    c8Ratios,
    seriesC8Bound: median(floors.map((r, i) => series(i) / r.c8.perSec)),
    seriesC8Ratio: median(toolwires.map((r, i) => r.c8.perSec / series(i))),
    p50Budget: t.p50Us / (f.p50Us * 1.5 + 300),
  };
}

/** An SDK client of its own over stdio to `args` (run by this Node), for a floor. */
async function floorClient(args: string[]): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport =
    process.env.BENCH_MCP_SETSID === '1'
      ? new StdioClientTransport({ command: 'setsid', args: [process.execPath, ...args], stderr: 'ignore' })
      : new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' });
  const client = new Client({ name: 'bench-floor', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

/** The file the filesystem arms read: 512 B of text in lines. */
const FILE_TEXT = 'toolwire bench: a small text file read through server-filesystem.\n'.repeat(8).slice(0, 511) + '\n';

/** `rounds` rounds of `calls` calls at c = 1 and at c = 8 of each arm (module comment). */
export async function mcpScenario(rounds: number, calls: number): Promise<McpResult> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'toolwire-bench-mcp-')));
  const file = join(dir, 'small.txt');
  await writeFile(file, FILE_TEXT);
  const fsCalls = Math.ceil(calls / 2);
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a.length > 0);
  const fakeArgs = [...extra, FAKE, 'normal'];
  const fsArgs = [...extra, FS_BIN, dir];
  const fsVersion = (JSON.parse(readFileSync(join(FS_PKG, 'package.json'), 'utf8')) as { version: string }).version;
  const floors: { client: Client; transport: StdioClientTransport }[] = [];
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
  const mcpServers = { fake: { command: process.execPath, args: fakeArgs }, fs: { command: process.execPath, args: fsArgs } };
  await writeFile(config, JSON.stringify({ mcpServers }));
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
    { stdio: 'ignore' },
  );
  try {
    const fakeFloor = await floorClient(fakeArgs);
    floors.push(fakeFloor);
    const fsFloor = await floorClient(fsArgs);
    floors.push(fsFloor);
    const until = Date.now() + 30_000;
    const wanted = ['h0__fake_echo', 'h0__fs_read_text_file', 'h1__echo'];
    const names = (): string[] => server.router.tools().map((t) => t.name);
    while (!wanted.every((n) => names().includes(n))) {
      if (Date.now() > until) throw new Error(`${wanted.filter((n) => !names().includes(n)).join(', ')} not advertised within 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const pids = {
      fakeFloor: { mcp: fakeFloor.transport.pid ?? undefined },
      fakeToolwire: { host: host.pid, mcp: childWith(host.pid, 'mcp-fake.mjs') },
      ceiling: { host: ceilingHost.pid, mcp: undefined },
      fsFloor: { mcp: fsFloor.transport.pid ?? undefined },
      fsToolwire: { host: host.pid, mcp: childWith(host.pid, FS_BIN) },
    } satisfies Record<string, Pids>;
    const viaFloor = (floor: Client, name: string, args: Record<string, unknown>) => async () => {
      const r = await floor.callTool({ name, arguments: args });
      if (r.isError === true) throw new Error(`a floor call of ${name} failed`);
    };
    const viaToolwire = (name: string, input: Record<string, unknown>) => async () => {
      const r = await server.executor.execute({ name, input, agent: 'bench' });
      if (r.outcome !== 'completed' || r.capture.exitCode !== 0) throw new Error(`a toolwire call of ${name} failed`);
    };
    const arms = [
      { call: viaFloor(fakeFloor.client, 'echo', { text: 'hi' }), pids: pids.fakeFloor, rounds: [] as Round[], calls },
      { call: viaToolwire('h0__fake_echo', { text: 'hi' }), pids: pids.fakeToolwire, rounds: [] as Round[], calls },
      { call: viaToolwire('h1__echo', { text: 'hi' }), pids: pids.ceiling, rounds: [] as Round[], calls },
      { call: viaFloor(fsFloor.client, 'read_text_file', { path: file }), pids: pids.fsFloor, rounds: [] as Round[], calls: fsCalls },
      { call: viaToolwire('h0__fs_read_text_file', { path: file }), pids: pids.fsToolwire, rounds: [] as Round[], calls: fsCalls },
    ];
    for (const arm of arms) await measure(arm.call, 200, arm.pids); // warm-up
    for (let i = 0; i < rounds; i++) for (const arm of arms) arm.rounds.push(await measure(arm.call, arm.calls, arm.pids));
    const [fakeFloors, fakeToolwires, ceilings, fsFloors, fsToolwires] = arms.map((a) => a.rounds) as [Round[], Round[], Round[], Round[], Round[]];
    return {
      rounds,
      calls,
      ...pairOf(fakeFloors, fakeToolwires, ceilings),
      ceiling: medianArm(ceilings),
      ceilingC8Ratio: median(ceilings.map((r, i) => r.c8.perSec / fakeFloors[i]!.c8.perSec)),
      filesystem: {
        server: `@modelcontextprotocol/server-filesystem@${fsVersion}`,
        tool: 'read_text_file',
        calls: fsCalls,
        fileBytes: Buffer.byteLength(FILE_TEXT),
        ...pairOf(fsFloors, fsToolwires, ceilings),
      },
    };
  } finally {
    host.kill('SIGTERM');
    ceilingHost.disconnect(); // the helper exits when its IPC channel closes
    await Promise.all([
      host.exitCode === null && host.signalCode === null ? once(host, 'exit') : undefined,
      ceilingHost.exitCode === null && ceilingHost.signalCode === null ? once(ceilingHost, 'exit') : undefined,
    ]);
    await server.close();
    for (const floor of floors) await floor.client.close();
    await rm(dir, { recursive: true, force: true });
  }
}
