/**
 * Bench helper for `bench/live.ts` (issue 13): a real `ToolwireServer` on 127.0.0.1:0 for one host
 * identity, its options from `BENCH_SERVER_OPTIONS` (JSON, e.g. raised `maxPayload`), and the calls
 * of the live-output arms made here through `router.route()` with an `onOutput` consumer.
 */
import { ToolwireServer, type ToolwireServerOptions } from '@toolwire/server';
import { makeInput, runSegment } from '../load.js';
import { send, serve, settledRssKiB } from './ipc.js';
import { memoryKiB, resetPeak } from './peak.js';
import { hostName, hostToken } from './tools.js';

const extra = JSON.parse(process.env.BENCH_SERVER_OPTIONS ?? '{}') as ToolwireServerOptions;
const server = new ToolwireServer({ hosts: [{ name: hostName(0), token: hostToken(0) }], ...extra });
const { url } = await server.listen(0, '127.0.0.1');
const tool = (name: string): string => `${hostName(0)}__${name}`;
const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const idle = new AbortController().signal;
function call(name: string, onOutput?: Parameters<typeof server.router.route>[0]['onOutput'], signal = idle, input: unknown = {}) {
  return server.router.route({ id: 'live', name: tool(name), input, workspace: '', agent: 'bench', signal, ...(onOutput && { onOutput }) });
}

const MARKER = /\[\.\.\. stdout truncated: (\d+) bytes/;

serve(async (command) => {
  switch (command.cmd) {
    case 'wait': {
      // Until exactly `tools` tools are listed (0: the host's session is gone).
      const until = Date.now() + 60_000;
      while (server.router.tools().length !== Number(command.tools)) {
        if (Date.now() > until) throw new Error(`not ${String(command.tools)} tools listed`);
        await sleep(20);
      }
      return {};
    }
    case 'stream': {
      // One call of `name`; `consumer: false` passes no onOutput (what a caller that does not stream does).
      let streamed = 0;
      let chunks = 0;
      const start = performance.now();
      const c = await call(
        String(command.name),
        command.consumer === false
          ? undefined
          : (chunk) => {
              streamed += chunk.bytes.length;
              chunks++;
            },
      );
      const ms = performance.now() - start;
      if (c === undefined || c.exitCode !== 0)
        throw new Error(
          `stream: exit ${c?.exitCode}: ${Buffer.from(c?.stderr ?? [])
            .toString()
            .slice(0, 300)}`,
        );
      return { ms, streamed, chunks, captureBytes: c.stdout.length };
    }
    case 'ttfb': {
      // The tool prints its clock; the consumer compares it with this process's clock at the chunk.
      const latencies: number[] = [];
      for (let i = 0; i < Number(command.reps); i++) {
        let latency: number | undefined;
        const c = await call('ttfb', (chunk) => {
          if (latency !== undefined) return;
          const at = now();
          latency = at - Number(Buffer.from(chunk.bytes).toString().trim()) / 1e6;
        });
        if (c?.exitCode !== 0 || latency === undefined) throw new Error(`ttfb: exit ${c?.exitCode}, nothing streamed`);
        latencies.push(latency);
      }
      return { latencies };
    }
    case 'hold': {
      // 1 GiB flood: not read at all for `holdMs`, then read freely for `readMs`, then stopped. Meanwhile
      // an in-process tool on the same host is called every 20 ms; this process's RSS is sampled.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let reading = false;
      let streamed = 0;
      let streamedWhileHeld = 0;
      const stop = new AbortController();
      const base = settledRssKiB();
      resetPeak();
      const pending = call(
        'flood',
        (chunk) => {
          streamed += chunk.bytes.length;
          if (!reading) {
            streamedWhileHeld = streamed;
            return held;
          }
          return undefined;
        },
        stop.signal,
      );
      const latencies: number[] = [];
      const probe = async (until: number) => {
        while (performance.now() < until) {
          const t = performance.now();
          const e = await call('echo');
          if (e?.exitCode !== 0) throw new Error('echo failed during the flood');
          latencies.push(performance.now() - t);
          await sleep(20);
        }
      };
      await probe(performance.now() + Number(command.holdMs));
      const heldPeakKiB = memoryKiB().peakKiB;
      reading = true;
      release();
      await probe(performance.now() + Number(command.readMs));
      stop.abort();
      const c = await pending;
      const stdout = Buffer.from(c?.stdout ?? []);
      const marker = MARKER.exec(stdout.toString('latin1'));
      return {
        baseKiB: base,
        heldPeakKiB,
        peakKiB: memoryKiB().peakKiB,
        streamedWhileHeld,
        streamed,
        exitCode: c?.exitCode,
        captureBytes: stdout.length,
        markerTotal: marker ? Number(marker[1]) : 0,
        latencies,
      };
    }
    case 'load': {
      // s1–s4 shapes: in-process `echo` calls (they stream nothing), closed loop.
      const input = makeInput(Number(command.bytes));
      const expected = JSON.stringify(input).length;
      const segment = await runSegment(
        Number(command.concurrency),
        Number(command.count),
        async () => {
          const c = await call('echo', undefined, undefined, input);
          return c?.exitCode === 0 && c.stdout.length === expected ? undefined : `exit ${c?.exitCode}`;
        },
        command.gc !== false,
      );
      return { segment };
    }
    case 'memory':
      return { self: memoryKiB(), settledKiB: settledRssKiB() };
    case 'cpu': {
      // This process's CPU time so far, µs (user + system): finer than /proc's 10 ms ticks.
      const c = process.cpuUsage();
      return { us: c.user + c.system };
    }
    case 'resetPeak':
      resetPeak();
      return {};
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready', url });
