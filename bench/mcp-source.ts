/**
 * `pnpm bench --only mcp` (issue 14): a call to a tool of a stdio MCP server through toolwire
 * (server → tool host process → MCP server → back; the server in this process, the host a
 * `toolwire host --mcp-config` process) against the same MCP server called directly by an MCP SDK
 * client in this process (the floor of that server). The MCP server is the tests' fake
 * (`packages/client/test/fixtures/mcp-fake.mjs`), its `echo` tool. For c = 1 and c = 8: calls/s over
 * `calls` calls, and the p50 latency at c = 1. Rounds alternate floor / toolwire; medians are reported.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolwireServer } from '@toolwire/server';

const repo = fileURLToPath(new URL('..', import.meta.url));
const FAKE = join(repo, 'packages', 'client', 'test', 'fixtures', 'mcp-fake.mjs');
const CLI = join(repo, 'packages', 'cli', 'src', 'main.ts');
const HOST_TOKEN = 'bench-host-token-aaaaaaaaaaaaaaaaaaaa';

/** One arm's figures. */
export interface McpArm {
  c1PerSec: number;
  c8PerSec: number;
  /** p50 latency at c = 1, µs. */
  p50Us: number;
}

export interface McpResult {
  floor: McpArm;
  toolwire: McpArm;
  /** toolwire c8 calls/s ÷ floor's (target ≥ 0.7). */
  c8Ratio: number;
  /** toolwire p50 ÷ (floor p50 × 1.5 + 300 µs) (target ≤ 1). */
  p50Budget: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** `calls` calls at concurrency `c`; resolves with calls/s and the p50 latency in µs. */
async function drive(call: () => Promise<void>, calls: number, c: number): Promise<{ perSec: number; p50Us: number }> {
  const lat: number[] = [];
  let next = 0;
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
  return { perSec: calls / ((performance.now() - t0) / 1000), p50Us: median(lat) };
}

async function measure(call: () => Promise<void>, calls: number): Promise<McpArm> {
  const c1 = await drive(call, calls, 1);
  const c8 = await drive(call, calls, 8);
  return { c1PerSec: c1.perSec, c8PerSec: c8.perSec, p50Us: c1.p50Us };
}

function medianArm(arms: McpArm[]): McpArm {
  return { c1PerSec: median(arms.map((a) => a.c1PerSec)), c8PerSec: median(arms.map((a) => a.c8PerSec)), p50Us: median(arms.map((a) => a.p50Us)) };
}

/** `rounds` alternating floor / toolwire rounds of `calls` calls at c = 1 and at c = 8. */
export async function mcpScenario(rounds: number, calls: number): Promise<McpResult> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-bench-mcp-'));
  const floor = new Client({ name: 'bench-floor', version: '1' });
  await floor.connect(new StdioClientTransport({ command: process.execPath, args: [FAKE, 'normal'] }));
  const server = new ToolwireServer({ hosts: [{ name: 'h0', token: HOST_TOKEN }], callers: [] });
  const address = await server.listen(0, '127.0.0.1');
  const config = join(dir, '.mcp.json');
  await writeFile(config, JSON.stringify({ mcpServers: { fake: { command: process.execPath, args: [FAKE, 'normal'] } } }));
  const host = spawn(
    process.execPath,
    [
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
    {
      stdio: 'ignore',
    },
  );
  try {
    const until = Date.now() + 30_000;
    while (!server.router.tools().some((t) => t.name === 'h0__fake_echo')) {
      if (Date.now() > until) throw new Error('the MCP tool was not advertised within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const viaFloor = async () => {
      await floor.callTool({ name: 'echo', arguments: { text: 'hi' } });
    };
    const viaToolwire = async () => {
      const r = await server.executor.execute({ name: 'h0__fake_echo', input: { text: 'hi' }, agent: 'bench' });
      if (r.outcome !== 'completed' || r.capture.exitCode !== 0) throw new Error('a toolwire call failed');
    };
    await measure(viaFloor, 200); // warm-up
    await measure(viaToolwire, 200);
    const floors: McpArm[] = [];
    const toolwires: McpArm[] = [];
    for (let i = 0; i < rounds; i++) {
      floors.push(await measure(viaFloor, calls));
      toolwires.push(await measure(viaToolwire, calls));
    }
    const f = medianArm(floors);
    const t = medianArm(toolwires);
    return { floor: f, toolwire: t, c8Ratio: t.c8PerSec / f.c8PerSec, p50Budget: t.p50Us / (f.p50Us * 1.5 + 300) };
  } finally {
    host.kill('SIGTERM');
    await once(host, 'exit');
    await server.close();
    await floor.close();
    await rm(dir, { recursive: true, force: true });
  }
}
