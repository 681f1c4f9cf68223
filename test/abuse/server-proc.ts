/**
 * A toolwire server in its own process for the abuse tests (run with `--expose-gc`), driven over
 * Node IPC: one command in, one reply out (matched by `seq`). It measures what only the server
 * process can see: its event-loop delay (`monitorEventLoopDelay`), the latency of calls it routes to
 * a host, and its memory after a full GC. Hosts `alpha` and `beta` (tokens from ABUSE_ALPHA_TOKEN,
 * ABUSE_BETA_TOKEN); more server options as JSON in ABUSE_OPTIONS. Exits when the test goes away.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ToolwireServer } from '@toolwire/server';
import { schemaCacheStats } from '../../packages/server/src/registry/schema-cache.js';

interface Command {
  seq: number;
  cmd: string;
  [key: string]: unknown;
}

const warnings: string[] = [];
const server = new ToolwireServer(
  {
    hosts: [
      { name: 'alpha', token: process.env.ABUSE_ALPHA_TOKEN! },
      { name: 'beta', token: process.env.ABUSE_BETA_TOKEN! },
    ],
    logger: {
      debug: () => {},
      info: () => {},
      warn: (_obj: unknown, msg?: string) => void (warnings.length < 10_000 && warnings.push(String(msg))),
      error: (obj: unknown, msg?: string) => process.stderr.write(`server error: ${String(msg)} ${String((obj as { err?: unknown }).err)}\n`),
    },
    ...(JSON.parse(process.env.ABUSE_OPTIONS ?? '{}') as object),
  },
  { workerIdleMs: Number(process.env.ABUSE_WORKER_IDLE_MS ?? 5_000) },
);
const { url } = await server.listen(0, '127.0.0.1');
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();

const ms = (ns: number): number => ns / 1e6;

const pause = (t: number): Promise<void> => new Promise((r) => setTimeout(r, t));

/** Call `name` one call after another for `durationMs` (or `count` calls); latencies in ms. */
async function calls(name: string, durationMs: number, count: number): Promise<{ latencies: number[]; failures: string[] }> {
  const latencies: number[] = [];
  const failures: string[] = [];
  const until = performance.now() + durationMs;
  for (let i = 0; i < count && performance.now() < until; i++) {
    const began = performance.now();
    const result = await server.executor.execute({ name, input: { i }, agent: 'abuse-test', deadlineMs: 30_000 });
    latencies.push(performance.now() - began);
    if (result.outcome !== 'completed' || result.capture.exitCode !== 0) {
      failures.push(result.outcome === 'completed' ? Buffer.from(result.capture.stderr).toString().slice(0, 200) : result.outcome);
    }
    await pause(20); // a host that calls now and then, not a flood
  }
  return { latencies, failures };
}

function memory(): Record<string, number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
}

async function handle(command: Command): Promise<object> {
  switch (command.cmd) {
    case 'delay-reset':
      delay.reset();
      return {};
    case 'delay':
      return { maxMs: ms(delay.max), p99Ms: ms(delay.percentile(99)), meanMs: ms(delay.mean) };
    case 'tools':
      return { tools: server.router.tools().map((t) => t.name) };
    case 'calls':
      return calls(String(command.name), Number(command.durationMs ?? 60_000), Number(command.count ?? 1e9));
    case 'memory':
      return memory();
    case 'log':
      return { sessions: server.hostEndpoint.sessionCount, warnings: warnings.length, lastWarnings: warnings.slice(-5) };
    case 'cache':
      return schemaCacheStats();

    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
}

process.on('message', (raw: unknown) => {
  const command = raw as Command;
  void handle(command).then(
    (reply) => process.send!({ seq: command.seq, ...reply }),
    (error: unknown) => process.send!({ seq: command.seq, error: String(error) }),
  );
});
process.on('disconnect', () => void server.close().then(() => process.exit(0)));
process.send!({ ready: true, url });
