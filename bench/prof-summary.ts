/**
 * `tsx bench/prof-summary.ts FILE.cpuprofile [N]` — the top N functions of a V8 CPU profile (from
 * `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" pnpm bench …`) by self time and by total time.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

const [file, top = '25'] = process.argv.slice(2);
if (!file) throw new TypeError('usage: prof-summary FILE.cpuprofile [N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: Node): string => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const where = url ? `${relative(process.cwd(), url).replace(/^.*node_modules\/\.pnpm\//, '')}:${n.callFrame.lineNumber + 1}` : '';
  return `${n.callFrame.functionName || '(anonymous)'} ${where}`.trim();
};
const self = new Map<string, number>();
const total = new Map<string, number>();
for (const id of profile.samples) {
  const leaf = byId.get(id)!;
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let n: Node | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
    const l = label(n);
    if (seen.has(l)) continue;
    seen.add(l);
    total.set(l, (total.get(l) ?? 0) + 1);
  }
}
const all = profile.samples.length;
const idle = self.get('(idle)') ?? 0;
const show = (title: string, m: Map<string, number>): void => {
  console.log(`${title} (of ${all} samples, ${((100 * idle) / all).toFixed(1)} % idle)`);
  for (const [l, c] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
    console.log(`${((100 * c) / all).toFixed(1).padStart(6)} %  ${l}`);
  }
};
show('self', self);
show('total', total);
