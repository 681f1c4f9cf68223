/**
 * The helper-process side of the bench control channel: Node IPC (`process.send`), one request →
 * one reply matched by `seq`. A helper exits when the orchestrator goes away (IPC disconnect).
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

/** A command from the orchestrator. `seq` is echoed in the reply. */
export interface Command {
  seq: number;
  cmd: string;
  [key: string]: unknown;
}

type Handler = (command: Command) => Promise<object> | object;

/** Send one message to the orchestrator. */
export function send(message: object): void {
  process.send?.(message);
}

/** Answer every command with `handler`; a throw is sent back as `{error}`. Exits on disconnect. */
export function serve(handler: Handler): void {
  process.on('message', (raw: unknown) => {
    const command = raw as Command;
    void (async () => {
      try {
        send({ seq: command.seq, ...(await handler(command)) });
      } catch (error) {
        send({ seq: command.seq, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
}

const require = createRequire(import.meta.url);

/** True when `ws` loaded the `bufferutil` native add-on in this process (it is in the CJS module cache). */
export function bufferutilLoaded(): boolean {
  return Object.keys(require.cache).some((path) => /[\\/]bufferutil[\\/]/.test(path));
}

/** What every helper reports about itself: peak RSS (KiB), current RSS (KiB), CPU time so far (µs), bufferutil loaded. */
export function processInfo(): { peakRssKiB: number; rssKiB: number; cpuUs: number; loopActiveUs: number; bufferutil: boolean } {
  const cpu = process.cpuUsage();
  return {
    loopActiveUs: performance.eventLoopUtilization().active * 1000,
    peakRssKiB: process.resourceUsage().maxRSS,
    rssKiB: Math.round(process.memoryUsage.rss() / 1024),
    cpuUs: cpu.user + cpu.system,
    bufferutil: bufferutilLoaded(),
  };
}

/** Current RSS in KiB after a full GC (when the process runs with `--expose-gc`). */
export function settledRssKiB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return Math.round(process.memoryUsage.rss() / 1024);
}
