/**
 * Issue 17 in `pnpm bench --only cluster`: a call routed across two server nodes (caller on node B,
 * host on node A, over a real `nats-server`) against the same call on node A, side by side in one
 * run, at c=1 and c=64 (`route()`, 100 B echo). Needs `nats-server` (Debian's package).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Arm, type ArmResult, compare, TOOLS_PER_HOST } from './arms.js';
import { Helper } from './helpers.js';
import type { LoadShape } from './scenarios.js';

export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => existsSync(p));

export interface ClusterBench {
  shapes: { same: ArmResult; cross: ArmResult }[];
}

/** A nats-server with JetStream on a random port; resolves with its URL and a stop. */
async function startNats(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (NATS_SERVER === undefined) throw new Error('the cluster scenario needs nats-server (apt-get install -y nats-server)');
  const store = await mkdtemp(join(tmpdir(), 'toolwire-bench-nats-'));
  const child: ChildProcess = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', '-1', '-js', '-sd', store], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      log += d;
      const m = /Listening for client connections on [^\s]+:(\d+)[\s\S]*Server is ready/.exec(log);
      if (m) resolve(`nats://127.0.0.1:${m[1]}`);
    });
    child.once('exit', () => reject(new Error(`nats-server exited: ${log}`)));
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
      await rm(store, { recursive: true, force: true });
    },
  };
}

export async function clusterScenario(shapes: LoadShape[]): Promise<ClusterBench> {
  const nats = await startNats();
  const helpers: Helper[] = [];
  try {
    const a = await Helper.start('toolwire-server', { BENCH_NATS: nats.url, BENCH_NODE: 'a' });
    helpers.push(a.helper);
    const b = await Helper.start('toolwire-server', { BENCH_NATS: nats.url, BENCH_NODE: 'b' });
    helpers.push(b.helper);
    const host = (await Helper.start('toolwire-host', { BENCH_URL: String(a.ready.url) })).helper;
    helpers.push(host);
    await a.helper.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    await b.helper.request('wait', { hosts: 1, tools: TOOLS_PER_HOST });
    const load = { name: 'h0__echo', path: 'route' };
    const same: Arm = { name: 'toolwire', server: a.helper, host, load };
    const cross: Arm = { name: 'toolwire', server: b.helper, host, load };
    const out: ClusterBench['shapes'] = [];
    for (const shape of shapes) {
      const [s, c] = await compare([same, cross], shape);
      out.push({ same: s!, cross: c! });
    }
    return { shapes: out };
  } finally {
    for (const h of helpers.reverse()) await h.stop();
    await nats.stop();
  }
}

/** Median of the per-segment ratios of `a` to `b` (calls/s). */
export function segmentRatio(a: ArmResult, b: ArmResult): number {
  const r = a.segmentRates.map((x, i) => x / b.segmentRates[i]!).sort((x, y) => x - y);
  return r[Math.floor(r.length / 2)]!;
}
