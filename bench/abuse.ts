/**
 * The `abuse` scenario (`pnpm bench --only abuse`, issue 11): what one authenticated host within
 * every limit can cost the others, measured in a server process of its own (test/abuse/server-proc.ts,
 * from source) with a well-behaved tool host beside it.
 *
 * - steps: the largest single steps the event loop takes for a host's frames (best of 7 here): a
 *   256 KiB frame of the densest JSON decoded inline, a 64 KiB schema text parsed, 128 KiB of
 *   validator code instantiated and its first call;
 * - the 2,000,000-entry advertise (5.7 MiB): reply size, time to the reply, the server's largest
 *   event-loop delay meanwhile, and the other host's call latency (p99 and worst) against its own
 *   baseline in the same run;
 * - a schema storm (test/soak/attacks/storm.ts, 8 s, budget 2 s per minute): the other host's p99
 *   during the storm over its baseline, the largest event-loop delay, the storm's answered and
 *   budget-refused tools;
 * - memory after three rounds of abuse (2,000,000-entry advertise, 2 s storm, junk frames, connection
 *   churn) and a full GC, over where it started: heap and RSS, with the default allocator and with
 *   `MALLOC_ARENA_MAX=2`.
 */
import { once } from 'node:events';
import { decodeHostMessage } from '@toolwire/protocol';
import { WebSocket } from 'ws';
import { compileToSource, instantiate, newAjv } from '../packages/server/src/registry/ajv-setup.js';
import { prepareAdvertise } from '../packages/server/src/registry/prepare.js';
import { ALPHA, BETA, quantile, type ServerProc, startHostProc, startServerProc } from '../test/abuse/harness.js';
import { cleanup } from '../test/helpers.js';
import { bigAdvertise, schemaStorm } from '../test/soak/attacks/storm.js';

/** One run of the scenario. Times in ms, sizes in bytes unless named MiB. */
export interface AbuseResult {
  steps: { inlineDecodeMs: number; schemaParseMs: number; instantiateMs: number; firstCallMs: number };
  advertise: { frameBytes: number; replyBytes: number; answerMs: number; loopMaxMs: number; baseP99Ms: number; p99Ms: number; worstMs: number };
  storm: { baseP99Ms: number; p99Ms: number; loopMaxMs: number; advertises: number; accepted: number; budgetRefused: number };
  memory: { heapMiB: number; rssMiB: number; rssArenas2MiB: number };
}

interface Calls {
  latencies: number[];
  failures: string[];
}

function best(f: () => unknown, n = 7): number {
  let min = Infinity;
  for (let i = 0; i < n; i++) {
    const began = performance.now();
    f();
    min = Math.min(min, performance.now() - began);
  }
  return min;
}

/** The largest single event-loop steps, measured in this process. */
function steps(): AbuseResult['steps'] {
  const limits = { maxToolsPerHost: 256, maxSchemaBytes: 65536, maxSchemaDepth: 32, maxDescriptionChars: 4096 };
  const frame = Buffer.from(`{"type":"advertise","tools":[${Array(29_000).fill('{"a":{}}').join(',')}]}`); // 256 KiB
  const inlineDecodeMs = best(() => {
    const d = decodeHostMessage(frame);
    if (d.ok && d.message.type === 'advertise') prepareAdvertise(d.message.tools, limits);
  });
  const dense = JSON.stringify({ type: 'object', properties: Object.fromEntries(Array.from({ length: 7_000 }, (_, i) => [`${i}`, {}])) }); // 64 KiB
  const schemaParseMs = best(() => JSON.parse(dense));
  const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}`, { type: 'string', maxLength: 10 + i }])) };
  const { source } = compileToSource(newAjv({ source: true }), wide); // about 128 KiB: the default maxSchemaCodeBytes
  let k = 0;
  const instantiateMs = best(() => instantiate(`${source}\n//${k++}`)); // a fresh text each time: no V8 code cache
  let firstCallMs = Infinity;
  for (let i = 0; i < 7; i++) {
    const validate = instantiate(`${source}\n//${k++}`);
    firstCallMs = Math.min(
      firstCallMs,
      best(() => validate({}), 1),
    );
  }
  return { inlineDecodeMs, schemaParseMs, instantiateMs, firstCallMs };
}

async function withServer<T>(options: object, env: NodeJS.ProcessEnv, body: (server: ServerProc) => Promise<T>): Promise<T> {
  try {
    const server = await startServerProc(options, env);
    await startHostProc(server, BETA, 'beta');
    return await body(server);
  } finally {
    await cleanup();
  }
}

async function advertise(): Promise<AbuseResult['advertise']> {
  return withServer({}, {}, async (server) => {
    const baseline = await server.request<Calls>('calls', { name: 'beta__echo', durationMs: 3_000 });
    await server.request('delay-reset');
    const during = server.request<Calls>('calls', { name: 'beta__echo', durationMs: 6_000 });
    const outcome = await bigAdvertise(server.url, ALPHA, 2_000_000);
    const calls = await during;
    const delay = await server.request<{ maxMs: number }>('delay');
    return {
      frameBytes: outcome.frameBytes,
      replyBytes: outcome.replyBytes ?? NaN,
      answerMs: outcome.ms,
      loopMaxMs: delay.maxMs,
      baseP99Ms: quantile(baseline.latencies, 0.99),
      p99Ms: quantile(calls.latencies, 0.99),
      worstMs: Math.max(...calls.latencies),
    };
  });
}

async function storm(): Promise<AbuseResult['storm']> {
  return withServer({ schemaCompileBudgetMs: 2_000 }, {}, async (server) => {
    const baseline = await server.request<Calls>('calls', { name: 'beta__echo', durationMs: 4_000 });
    await server.request('delay-reset');
    const [counts, during] = await Promise.all([
      schemaStorm({ url: server.url, token: ALPHA, durationMs: 8_000 }),
      server.request<Calls>('calls', { name: 'beta__echo', durationMs: 8_000 }),
    ]);
    const delay = await server.request<{ maxMs: number }>('delay');
    return {
      baseP99Ms: quantile(baseline.latencies, 0.99),
      p99Ms: quantile(during.latencies, 0.99),
      loopMaxMs: delay.maxMs,
      advertises: counts.advertises,
      accepted: counts.accepted,
      budgetRefused: counts.budgetRefused,
    };
  });
}

async function junk(url: string): Promise<void> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${ALPHA}` } });
  ws.on('error', () => {});
  await once(ws, 'open');
  const closed = once(ws, 'close');
  ws.send(JSON.stringify({ type: 'hello', protocol: 1 }));
  for (let i = 0; i < 1_000; i++) {
    ws.send(JSON.stringify({ type: 'result', id: `nobody-${i}`, stdout: 'x', stderr: '', exitCode: 0 }));
    if (i % 50 === 0) ws.send(JSON.stringify({ type: 'result', id: `big-${i}`, stdout: 'y'.repeat(300 * 1024), stderr: '', exitCode: 0 }));
  }
  ws.send('{not json');
  await closed;
}

/** Heap and RSS growth (MiB) after three rounds of abuse and a full GC. */
async function memory(env: NodeJS.ProcessEnv): Promise<{ heapMiB: number; rssMiB: number }> {
  return withServer({}, { ABUSE_WORKER_IDLE_MS: '300', ...env }, async (server) => {
    const round = async (scale: number): Promise<void> => {
      await bigAdvertise(server.url, ALPHA, Math.round(2_000_000 * scale));
      await schemaStorm({ url: server.url, token: ALPHA, durationMs: 2_000 * scale });
      await junk(server.url);
    };
    const settled = async (): Promise<{ heapUsed: number; rss: number }> => {
      await new Promise((r) => setTimeout(r, 2_000));
      return server.request('memory');
    };
    await round(0.1);
    const before = await settled();
    for (let i = 0; i < 3; i++) await round(1);
    const after = await settled();
    return { heapMiB: (after.heapUsed - before.heapUsed) / 2 ** 20, rssMiB: (after.rss - before.rss) / 2 ** 20 };
  });
}

/** One run of the scenario. */
export async function abuseScenario(log: (line: string) => void): Promise<AbuseResult> {
  const s = steps();
  log(
    `abuse steps: inline decode ${s.inlineDecodeMs.toFixed(1)} ms, schema parse ${s.schemaParseMs.toFixed(1)} ms, instantiate ${s.instantiateMs.toFixed(1)} ms + first call ${s.firstCallMs.toFixed(1)} ms`,
  );
  const a = await advertise();
  log(
    `abuse 2M advertise: reply ${a.replyBytes} B in ${a.answerMs.toFixed(0)} ms, loop max ${a.loopMaxMs.toFixed(0)} ms, other host p99 ${a.baseP99Ms.toFixed(0)} → ${a.p99Ms.toFixed(0)} ms`,
  );
  const st = await storm();
  log(
    `abuse storm: other host p99 ${st.baseP99Ms.toFixed(0)} → ${st.p99Ms.toFixed(0)} ms, loop max ${st.loopMaxMs.toFixed(0)} ms, ${st.budgetRefused} tools refused by budget`,
  );
  const plain = await memory({});
  const arenas = await memory({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
  log(`abuse memory: heap +${plain.heapMiB.toFixed(1)} MiB, RSS +${plain.rssMiB.toFixed(1)} MiB (arena_max=2: +${arenas.rssMiB.toFixed(1)} MiB)`);
  return { steps: s, advertise: a, storm: st, memory: { heapMiB: plain.heapMiB, rssMiB: plain.rssMiB, rssArenas2MiB: arenas.rssMiB } };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The scenario's table (medians over runs), with the bounds of issue 11. */
export function renderAbuse(results: AbuseResult[]): string {
  const med = (pick: (r: AbuseResult) => number): number => median(results.map(pick));
  const ok = (pass: boolean): string => (pass ? 'holds' : 'MISSED');
  const stepMax = med((r) => Math.max(r.steps.inlineDecodeMs, r.steps.schemaParseMs, r.steps.instantiateMs, r.steps.firstCallMs));
  const advP99 = med((r) => r.advertise.p99Ms);
  const stormRatio = med((r) => r.storm.p99Ms / r.storm.baseP99Ms);
  const rows: [string, string, string][] = [
    [
      'largest event-loop step (inline decode 256 KiB / schema parse 64 KiB / instantiate 128 KiB / first call)',
      `${med((r) => r.steps.inlineDecodeMs).toFixed(1)} / ${med((r) => r.steps.schemaParseMs).toFixed(1)} / ${med((r) => r.steps.instantiateMs).toFixed(1)} / ${med((r) => r.steps.firstCallMs).toFixed(1)} ms`,
      `≤ 50 ms: ${ok(stepMax <= 50)}`,
    ],
    [
      '2M-entry advertise: reply size, time to reply',
      `${med((r) => r.advertise.replyBytes)} B, ${med((r) => r.advertise.answerMs).toFixed(0)} ms`,
      `reply < 64 KiB: ${ok(med((r) => r.advertise.replyBytes) < 65536)}`,
    ],
    [
      '2M-entry advertise: server event-loop delay, max',
      `${med((r) => r.advertise.loopMaxMs).toFixed(0)} ms`,
      `< 150 ms: ${ok(med((r) => r.advertise.loopMaxMs) < 150)}`,
    ],
    [
      '2M-entry advertise: other host p99 (baseline → during), worst',
      `${med((r) => r.advertise.baseP99Ms).toFixed(0)} → ${advP99.toFixed(0)} ms, ${med((r) => r.advertise.worstMs).toFixed(0)} ms`,
      `worst < 1000 ms: ${ok(med((r) => r.advertise.worstMs) < 1000)}`,
    ],
    [
      'schema storm: other host p99 (baseline → storm), ratio',
      `${med((r) => r.storm.baseP99Ms).toFixed(0)} → ${med((r) => r.storm.p99Ms).toFixed(0)} ms, ${stormRatio.toFixed(2)}`,
      `≤ 2 × or ≤ 100 ms: ${ok(stormRatio <= 2 || med((r) => r.storm.p99Ms) <= 100)}`,
    ],
    ['schema storm: server event-loop delay, max', `${med((r) => r.storm.loopMaxMs).toFixed(0)} ms`, `< 150 ms: ${ok(med((r) => r.storm.loopMaxMs) < 150)}`],
    [
      'schema storm: advertises sent, tools accepted, refused by the budget',
      `${med((r) => r.storm.advertises)}, ${med((r) => r.storm.accepted)}, ${med((r) => r.storm.budgetRefused)}`,
      '',
    ],
    ['after 3 abuse rounds + GC: heap growth', `${med((r) => r.memory.heapMiB).toFixed(1)} MiB`, `< 16 MiB: ${ok(med((r) => r.memory.heapMiB) < 16)}`],
    [
      'after 3 abuse rounds + GC: RSS growth (`MALLOC_ARENA_MAX=2`)',
      `${med((r) => r.memory.rssMiB).toFixed(1)} MiB (${med((r) => r.memory.rssArenas2MiB).toFixed(1)} MiB)`,
      `< 96 MiB: ${ok(med((r) => r.memory.rssMiB) < 96)}`,
    ],
  ];
  return ['| abuse (issue 11) | measured | bound |', '|---|---|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
