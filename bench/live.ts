/**
 * `pnpm bench --only live` (issue 13): streaming throughput. A subprocess tool writes `bytes` of
 * stdout (`yes … | head -c N`) through a real tool host (spawn helper, output chunks within the
 * credit window) to a real server whose consumer (`RoutedCall.onOutput`) counts every chunk, against
 * `child_process.spawn` of the same command read to the end in one process (the floor). Runs
 * alternate floor / toolwire; the figure is the median over pairs of floor time / toolwire time
 * (1 = as fast as the floor). Peak RSS of the server and host processes (and the spawn helper) is
 * read after the runs; the server keeps only the capture's head + tail of what streamed.
 */
import { Helper } from './helpers.js';

/** What `live` measured. Times in ms, sizes in KiB unless named. */
export interface LiveResult {
  bytes: number;
  pairs: { floorMs: number; toolwireMs: number; chunks: number }[];
  /** Median of floorMs / toolwireMs over the pairs. */
  ratio: number;
  toolwireMiBps: number;
  floorMiBps: number;
  serverPeakRssKiB: number;
  hostPeakRssKiB: number;
  helperPeakRssKiB: number;
  /** RSS before the first run (after start-up and a warm-up call). */
  serverIdleRssKiB: number;
  hostIdleRssKiB: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** `reps` alternating pairs of one `bytes` stream each. */
export async function liveScenario(reps: number, bytes: number): Promise<LiveResult> {
  const command = `yes 'live output bench: a line of build log text, 0123456789' | head -c ${bytes}`;
  const helpers: Helper[] = [];
  try {
    const { helper: server, ready } = await Helper.start('toolwire-server');
    helpers.push(server);
    const { helper: host } = await Helper.start('toolwire-host', { BENCH_URL: String(ready.url), BENCH_FLOOD: command });
    helpers.push(host);
    const { helper: floor } = await Helper.start('spawn-floor');
    helpers.push(floor);
    await server.request('wait', { hosts: 1, tools: 11 });
    await server.request('stream', { name: 'h0__flood' }); // warm-up: the spawn helper, V8
    await floor.request('flood', { command });
    const serverIdleRssKiB = Number((await server.request('info')).rssKiB);
    const hostIdleRssKiB = Number((await host.request('info')).rssKiB);
    const pairs: LiveResult['pairs'] = [];
    for (let i = 0; i < reps; i++) {
      const runFloor = async () => {
        const f = await floor.request('flood', { command });
        if (Number(f.bytes) !== bytes) throw new Error(`floor read ${String(f.bytes)} bytes`);
        return Number(f.ms);
      };
      const runToolwire = async () => {
        const t = await server.request('stream', { name: 'h0__flood' });
        if (Number(t.streamed) !== bytes) throw new Error(`toolwire streamed ${String(t.streamed)} bytes`);
        return { ms: Number(t.ms), chunks: Number(t.chunks) };
      };
      // A B, B A, …: drift and other work on the machine hit both alike.
      let floorMs: number;
      let tw: { ms: number; chunks: number };
      if (i % 2 === 0) {
        floorMs = await runFloor();
        tw = await runToolwire();
      } else {
        tw = await runToolwire();
        floorMs = await runFloor();
      }
      pairs.push({ floorMs, toolwireMs: tw.ms, chunks: tw.chunks });
    }
    const s = await server.request('info');
    const h = await host.request('info');
    const MiB = 1024 * 1024;
    return {
      bytes,
      pairs,
      ratio: median(pairs.map((p) => p.floorMs / p.toolwireMs)),
      toolwireMiBps: bytes / MiB / (median(pairs.map((p) => p.toolwireMs)) / 1000),
      floorMiBps: bytes / MiB / (median(pairs.map((p) => p.floorMs)) / 1000),
      serverPeakRssKiB: Number(s.peakRssKiB),
      hostPeakRssKiB: Number(h.peakRssKiB),
      helperPeakRssKiB: Number(h.helperPeakRssKiB),
      serverIdleRssKiB,
      hostIdleRssKiB,
    };
  } finally {
    await Promise.all(helpers.map((h) => h.stop()));
  }
}
