/**
 * Bench helper for `bench/live.ts` (issue 13): one real `ToolHost` (identity 0) with the live-output
 * tools — `flood` (`BENCH_FLOOD`, a shell command writing a lot of stdout), `ttfb` (prints its own
 * clock, ms since the epoch with a fraction, then sleeps 50 ms), `echo` (in-process) — and its options
 * from `BENCH_HOST_OPTIONS` (JSON, e.g. `{"liveOutput":false,"maxCaptureBytes":…}`).
 */
import { ToolHost, type ToolHostOptions } from '@toolwire/client';
import { spawnHelperPid } from '../../packages/client/src/subprocess/spawn-helper.js';
import { send, serve, settledRssKiB } from './ipc.js';
import { memoryKiB, resetPeak } from './peak.js';
import { hostToken } from './tools.js';

const warn = (obj: unknown, msg?: string): void => console.error('bench live host:', msg ?? '', typeof obj === 'string' ? obj : JSON.stringify(obj));
const logger = { debug() {}, info() {}, warn, error: warn } as unknown as NonNullable<ToolHostOptions['logger']>;
const extra = JSON.parse(process.env.BENCH_HOST_OPTIONS ?? '{}') as Partial<ToolHostOptions>;
const host = new ToolHost({ server: process.env.BENCH_URL!, token: hostToken(0), reconnect: false, logger, ...extra });
const object = { type: 'object' } as const;
host.tool('echo', { inputSchema: object }, (input) => JSON.stringify(input));
host.command('flood', { inputSchema: object, command: ['sh', '-c', process.env.BENCH_FLOOD ?? 'true'] });
// `date +%s%N` is read before printf writes: the measured latency includes the shell's printf (conservative).
host.command('ttfb', { inputSchema: object, command: ['sh', '-c', 'printf "%s\\n" "$(date +%s%N)"; sleep 0.05'] });
await host.start();

serve((command) => {
  const helper = spawnHelperPid();
  switch (command.cmd) {
    case 'memory':
      return {
        self: memoryKiB(),
        helper: helper === undefined ? { peakKiB: 0, rssKiB: 0 } : memoryKiB(helper),
        helperPid: helper ?? 0,
        settledKiB: settledRssKiB(),
      };
    case 'cpu': {
      // This process's CPU time so far, µs (user + system): finer than /proc's 10 ms ticks.
      const c = process.cpuUsage();
      return { us: c.user + c.system };
    }
    case 'resetPeak':
      resetPeak();
      if (helper !== undefined) resetPeak(helper);
      return {};
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready' });
