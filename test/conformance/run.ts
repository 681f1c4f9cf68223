/**
 * `pnpm conformance` — the official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * server scenarios) against a real ToolwireServer with a connected ToolHost.
 *
 *   pnpm conformance [--node PATH] [--scenario NAME] [--out FILE]
 *
 * The suite needs Node ≥ 22: `--node PATH`, else this node when it is ≥ 22, else Node
 * {@link NODE_VERSION} from the npm registry's `node` package (as `.ci/run` gets it for the pack
 * test), installed with the suite ({@link SUITE_VERSION}, pinned) into a temporary folder. The suite
 * cannot send an Authorization header, so it talks to a proxy on 127.0.0.1 that adds the caller's
 * bearer token and forwards to the door unchanged (no server option turns caller auth off).
 *
 * The host advertises the tools the scenarios call (`test_simple_text`, `test_error_handling`, …,
 * naming `bare`). Each scenario's checks are read from the suite's results folder; a scenario is
 * "n/a" when it exercises a capability the door does not declare ({@link NOT_APPLICABLE}: it has only
 * `tools` and sends no server-to-client requests), "known failure" when listed in
 * {@link KNOWN_FAILURES} with the change that fixes it, else pass when none of its checks failed
 * (warnings allowed). Prints the table as Markdown (and writes it to `--out`); exits 1 when another
 * applicable scenario fails, 0 otherwise.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ToolHost } from '@toolwire/client';
import { ToolwireServer } from '@toolwire/server';

const here = dirname(fileURLToPath(import.meta.url));

const SUITE_VERSION = '0.1.16';
const NODE_VERSION = '24.21.0';
const CALLER = 'conformance-caller-token-0123456789';
const HOST = 'conformance-host-token-0123456789';
/** Scenarios of capabilities the door does not declare (it declares `tools` only and sends no server-to-client requests): why n/a. */
const NOT_APPLICABLE: [RegExp, string][] = [
  [/^resources-/, 'no resources capability'],
  [/^prompts-/, 'no prompts capability'],
  [/^logging-|^tools-call-with-logging$/, 'no logging capability'],
  [/^completion-/, 'no completions capability'],
  [/^tools-call-sampling$/, 'the door sends no sampling requests'],
  [/^tools-call-elicitation$|^elicitation-/, 'the door sends no elicitation requests'],
];
/**
 * Scenarios of the tools capability that fail for a known reason handled by another change: listed
 * as "known" (not failing the run); one that passes is reported so the entry can be removed.
 */
const KNOWN_FAILURES: Record<string, string> = {};

const { values: flags } = parseArgs({ options: { node: { type: 'string' }, scenario: { type: 'string' }, out: { type: 'string' } } });

/** Run `cmd` to its end (at most `timeoutMs`), output captured. */
function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** A proxy on 127.0.0.1 that adds `Authorization: Bearer <CALLER>` and forwards to `target` (streams both ways). */
async function authProxy(target: URL): Promise<{ url: string; close: () => Promise<void> }> {
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, authorization: `Bearer ${CALLER}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`,
    close: () => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(() => resolve()));
    },
  };
}

/** The tools the suite's server scenarios call. */
function conformanceHost(server: string): ToolHost {
  const host = new ToolHost({ server, token: HOST, reconnect: false });
  const none = { type: 'object', properties: {} };
  // Image, audio and resource content comes from an MCP server on the host (issue 14), as it would in use.
  host.mcpServer('content', { command: process.execPath, args: [join(here, 'content-server.mjs')], prefix: '' });
  host.tool('test_simple_text', { description: 'Returns simple text', inputSchema: none }, () => 'This is a simple text response for testing.');
  host.tool('test_error_handling', { description: 'Always fails', inputSchema: none }, () => ({
    stdout: new Uint8Array(),
    stderr: new TextEncoder().encode('This tool intentionally returns an error for testing\n'),
    exitCode: 1,
  }));
  host.tool('test_tool_with_progress', { description: 'Reports progress', inputSchema: none }, async (_input, ctx) => {
    for (const step of [0, 50, 100]) {
      ctx.progress(`step ${step}/100`);
      await ctx.write('stdout', `progress ${step}\n`);
      await new Promise((r) => setTimeout(r, 300));
    }
    return 'done';
  });
  // server-sse-polling calls it on a 2025-11-25 session; the door has no resumability (no event
  // store), so the answer comes on the POST stream itself (the suite warns: no priming event).
  host.tool('test_reconnection', { description: 'Answers on the POST stream', inputSchema: none }, () => 'Reconnection test completed successfully');
  host.tool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    },
    (input) => JSON.stringify(input),
  );
  host.on('error', () => {});
  return host;
}

/** Node ≥ 22 for the suite, and the folder the suite is installed in. */
async function prepare(work: string): Promise<{ node: string; suite: string }> {
  let node = flags.node ?? (Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : undefined);
  const packages = [`@modelcontextprotocol/conformance@${SUITE_VERSION}`, ...(node === undefined ? [`node@${NODE_VERSION}`] : [])];
  process.stderr.write(`conformance: npm install ${packages.join(' ')}\n`);
  const installed = await run('npm', ['install', '--prefix', work, '--no-audit', '--no-fund', '--loglevel=error', ...packages], work, 600_000);
  if (installed.code !== 0) throw new Error(`npm install failed: ${installed.out.slice(-2000)}`);
  node ??= join(work, 'node_modules', 'node', 'bin', 'node');
  return { node, suite: join(work, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js') };
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/** Every `checks.json` under `dir`, by scenario (the folder name starts with the scenario's). */
function readChecks(dir: string): Map<string, Check[]> {
  const found = new Map<string, Check[]>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === 'checks.json') found.set(d, JSON.parse(readFileSync(path, 'utf8')) as Check[]);
    }
  };
  walk(dir);
  return found;
}

async function main(): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'toolwire-conformance-'));
  const server = new ToolwireServer({ hosts: [{ name: 'conf', token: HOST }], callers: [{ name: 'conformance', token: CALLER }], naming: 'bare' });
  let host: ToolHost | undefined;
  let proxy: Awaited<ReturnType<typeof authProxy>> | undefined;
  try {
    const { node, suite } = await prepare(work);
    const listening = await server.listen(0, '127.0.0.1');
    host = conformanceHost(listening.url);
    await host.start();
    // The MCP-sourced tools are advertised once their server is up: wait for them, bounded.
    for (const until = Date.now() + 30_000; !server.router.tools().some((t) => t.name === 'test_image_content');) {
      if (Date.now() > until) throw new Error("the content MCP server's tools were not advertised within 30 s");
      await new Promise((r) => setTimeout(r, 50));
    }
    proxy = await authProxy(new URL(listening.mcpUrl));
    const list = await run(node, [suite, 'list'], work, 60_000);
    const scenarios = [...list.out.split('Client scenarios')[0]!.matchAll(/^\s+- (\S+) \[/gm)]
      .map((m) => m[1]!)
      .filter((s) => flags.scenario === undefined || s === flags.scenario);
    const rows: string[] = [];
    let failed = 0;
    for (const scenario of scenarios) {
      const notDeclared = NOT_APPLICABLE.find(([pattern]) => pattern.test(scenario))?.[1];
      const known = KNOWN_FAILURES[scenario];
      const outDir = join(work, 'results', scenario);
      const result = await run(node, [suite, 'server', '--url', proxy.url, '--scenario', scenario, '-o', outDir], work, 120_000);
      const checks = [...readChecks(join(work, 'results')).entries()].filter(([dir]) => dir.startsWith(outDir)).flatMap(([, c]) => c);
      const failures = checks.filter((c) => c.status === 'FAILURE');
      const warnings = checks.filter((c) => c.status === 'WARNING').length;
      const passed = checks.filter((c) => c.status === 'SUCCESS').length;
      let verdict: string;
      const ok = failures.length === 0 && checks.length > 0 && result.code === 0;
      if (notDeclared !== undefined) verdict = `n/a (${notDeclared})`;
      else if (ok) verdict = known === undefined ? 'pass' : 'pass (remove it from KNOWN_FAILURES)';
      else if (known !== undefined) verdict = `known failure (${known})`;
      else {
        verdict = 'FAIL';
        failed++;
      }
      const why = failures.map((f) => `${f.id}: ${(f.errorMessage ?? '').replace(/\s+/g, ' ').slice(0, 140)}`).join('; ');
      rows.push(`| ${scenario} | ${verdict} | ${passed} | ${failures.length} | ${warnings} | ${notDeclared === undefined ? why.replace(/\|/g, '\\|') : ''} |`);
      process.stderr.write(`conformance: ${scenario}: ${verdict}\n`);
    }
    const table = [
      `MCP conformance (@modelcontextprotocol/conformance ${SUITE_VERSION}, server scenarios, Node ${(await run(node, ['--version'], work, 10_000)).out.trim()})`,
      '',
      '| scenario | result | checks passed | failed | warnings | failures |',
      '| --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
    ].join('\n');
    process.stdout.write(table);
    if (flags.out !== undefined) writeFileSync(flags.out, table);
    return failed === 0 ? 0 : 1;
  } finally {
    await host?.close();
    await proxy?.close();
    await server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
