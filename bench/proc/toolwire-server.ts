/**
 * Bench helper: a real `ToolwireServer` on 127.0.0.1:0 with `BENCH_HOSTS` host identities (default 1)
 * and, when `BENCH_RECORD_DIR` is set, disk records there. The load runs in this process, through
 * `router.route()` (path `route`) or `executor.execute()` (path `execute`).
 */
import { ToolwireServer } from '@toolwire/server';
import { makeInput, runSegment, type Call } from '../load.js';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';
import { DEFAULT_HOSTS, hostName, hostToken } from './tools.js';

const hostCount = Number(process.env.BENCH_HOSTS ?? DEFAULT_HOSTS);
const recordDir = process.env.BENCH_RECORD_DIR;
// A cluster node (bench/cluster.ts): BENCH_NATS is the NATS URL, BENCH_NODE this node's id.
const nats = process.env.BENCH_NATS;
const server = new ToolwireServer({
  hosts: Array.from({ length: hostCount }, (_, i) => ({ name: hostName(i), token: hostToken(i) })),
  // Room for every bench host (s6 connects 2,000); the default cap is 1,024 connections.
  maxConnections: hostCount + 64,
  ...(recordDir ? { recordDir } : {}),
  ...(nats ? { cluster: { nats: [nats], name: 'bench', node: process.env.BENCH_NODE ?? 'a' } } : {}),
});
const { url } = await server.listen(0, '127.0.0.1');
// One stop signal per load worker, as each concurrent agent would have its own (the executor makes
// one per call; that cost belongs to the executor, measured in s7).
const signals: AbortSignal[] = [];
const signalOf = (worker: number): AbortSignal => (signals[worker] ??= new AbortController().signal);

/** Wait until at least `hosts` hosts and `tools` tools are there (`exact`: exactly that many). */
async function waitFor(hosts: number, tools: number, timeoutMs: number, exact: boolean): Promise<void> {
  const until = Date.now() + timeoutMs;
  const done = (): boolean => {
    const h = server.router.hosts().length;
    const t = server.router.tools().length;
    return exact ? h === hosts && t === tools : h >= hosts && t >= tools;
  };
  while (!done()) {
    if (Date.now() > until) {
      throw new Error(`timed out: ${server.router.hosts().length}/${hosts} hosts, ${server.router.tools().length}/${tools} tools`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

function makeCall(path: string, name: string, input: unknown, expect: string): Call {
  const expectedBytes = Buffer.byteLength(expect);
  if (path === 'execute') {
    return async () => {
      const result = await server.executor.execute({ name, input, agent: 'bench' });
      if (result.outcome !== 'completed') return `${result.outcome}: ${result.reason}`;
      const c = result.capture;
      if (c.exitCode !== 0 || c.stdout.length !== expectedBytes) return `exit ${c.exitCode}: ${Buffer.from(c.stderr).toString()}`;
      return undefined;
    };
  }
  return async (i, worker) => {
    const c = await server.router.route({ id: String(i), name, input, workspace: '', agent: 'bench', signal: signalOf(worker) });
    if (c === undefined) return `no such tool ${name}`;
    if (c.exitCode !== 0 || c.stdout.length !== expectedBytes) return `exit ${c.exitCode}: ${Buffer.from(c.stderr).toString().slice(0, 200)}`;
    return undefined;
  };
}

serve(async (command) => {
  switch (command.cmd) {
    case 'wait':
      await waitFor(Number(command.hosts ?? 1), Number(command.tools ?? 1), Number(command.timeoutMs ?? 60_000), command.exact === true);
      return { hosts: server.router.hosts().length, tools: server.router.tools().length };
    case 'load': {
      const input = makeInput(Number(command.bytes));
      const call = makeCall(command.path === 'execute' ? 'execute' : 'route', String(command.name), input, JSON.stringify(input));
      return { segment: await runSegment(Number(command.concurrency), Number(command.count), call) };
    }
    case 'stream': {
      // Live output (bench/live.ts): one call whose chunks are counted as they arrive.
      let streamed = 0;
      let chunks = 0;
      const start = performance.now();
      const c = await server.router.route({
        id: 'live',
        name: String(command.name),
        input: {},
        workspace: '',
        agent: 'bench',
        signal: signalOf(0),
        onOutput: (chunk) => {
          streamed += chunk.bytes.length;
          chunks++;
        },
      });
      const ms = performance.now() - start;
      if (c === undefined || c.exitCode !== 0)
        throw new Error(
          `stream: exit ${c?.exitCode}: ${Buffer.from(c?.stderr ?? [])
            .toString()
            .slice(0, 200)}`,
        );
      return { ms, streamed, chunks, captureBytes: c.stdout.length };
    }
    case 'rss':
      return { rssKiB: settledRssKiB() };
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready', url });
