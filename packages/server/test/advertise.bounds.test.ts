/**
 * Issue 11 §1 — a host's advertise costs bounded work: a bounded reply whatever the entry count,
 * schemas compiled off the event loop within a per-host budget (cached by text), validator code
 * bounded, one advertise checked at a time, warnings about a host rate-limited.
 */
import { Defaults } from '@toolwire/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { CompileBudgets } from '../src/registry/compile-budget.js';
import { ToolRegistry } from '../src/registry/registry.js';
import { MAX_REASON_CHARS } from '../src/registry/validate-tool.js';
import { LogLimiter } from '../src/session/log-limiter.js';
import { BETA_TOKEN, type LogEntry, nextFrame, rawHost, recordingLogger, send, startEndpoint, teardown, waitFor } from './endpoint.harness.js';

afterEach(teardown);

const limits = { naming: 'qualified' as const, maxToolsPerHost: 256, maxSchemaBytes: Defaults.maxSchemaBytes, maxSchemaDepth: 32, maxDescriptionChars: 4096 };
const tool = (name: string, inputSchema: object = { type: 'object' }) => ({ name, inputSchema });

describe('the advertised reply is bounded', () => {
  it('examines 2 × maxToolsPerHost entries, lists at most maxToolsPerHost rejections and counts the rest', () => {
    const entries: unknown[] = Array.from({ length: 100_000 }, () => ({}));
    const { advertised } = new ToolRegistry(limits).replace('alpha', entries);
    expect(advertised.accepted).toEqual([]);
    expect(advertised.rejected).toHaveLength(256);
    expect(advertised.moreRejected).toBe(100_000 - 256);
    expect(JSON.stringify(advertised).length).toBeLessThan(64 * 1024);
  });

  it('accepts maxToolsPerHost valid tools from a long advertise and counts the rest as too many', () => {
    const entries = Array.from({ length: 10_000 }, (_, i) => tool(`t${i}`));
    const { advertised } = new ToolRegistry(limits).replace('alpha', entries);
    expect(advertised.accepted).toHaveLength(256);
    expect(advertised.rejected).toHaveLength(256);
    expect(advertised.rejected.every((r) => r.reason === 'too many tools: at most 256 per host')).toBe(true);
    expect(advertised.moreRejected).toBe(10_000 - 512);
  });

  it('cuts a rejection reason to 512 characters', () => {
    const { advertised } = new ToolRegistry(limits).replace('alpha', [tool('t', { type: 'object', ['k'.repeat(5_000)]: true })]);
    expect(advertised.rejected[0]!.reason.length).toBeLessThanOrEqual(MAX_REASON_CHARS);
    expect(advertised.rejected[0]!.reason).toMatch(/^inputSchema does not compile: strict mode: unknown keyword/);
  });
});

describe('budgets and warning limits (units)', () => {
  it('a compile budget is spent, refused at zero, and earned back over its window', () => {
    let now = 0;
    const budgets = new CompileBudgets({ budgetMs: 100, windowMs: 1_000 }, () => now);
    expect(budgets.left('alpha')).toBe(100);
    budgets.charge('alpha', 150);
    expect(budgets.left('alpha')).toBe(-50);
    expect(budgets.left('beta')).toBe(100); // another host never pays
    now = 500;
    expect(budgets.left('alpha')).toBe(0);
    now = 2_000;
    expect(budgets.left('alpha')).toBe(100);
    expect(budgets.refusal('alpha')).toMatch(/host alpha has used its schema compile budget \(100 ms per 1000 ms\); advertise again later/);
  });

  it('logs at most maxLogLinesPerHost warnings per window, then says how many it suppressed', () => {
    const { logger, entries } = recordingLogger();
    let now = 0;
    const log = new LogLimiter(logger, { maxLogLinesPerHost: 3, logWindowMs: 1_000 }, () => now);
    for (let i = 0; i < 10; i++) log.warn({ host: 'alpha', i }, 'junk');
    expect(entries.map((e) => e.msg)).toEqual(['junk', 'junk', 'junk']);
    now = 1_000;
    log.warn({ host: 'alpha' }, 'junk');
    expect(entries.slice(3).map((e) => e.msg)).toEqual(['7 more warnings about this host suppressed', 'junk']);
  });
});

/** hello, then the welcome. */
async function hello(ws: Awaited<ReturnType<typeof rawHost>>): Promise<void> {
  const welcome = nextFrame(ws, 'welcome');
  send(ws, { type: 'hello', protocol: 1 });
  await welcome;
}

/** Every `advertised` frame `ws` receives, in order. */
function replies(ws: Awaited<ReturnType<typeof rawHost>>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  ws.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    if (frame.type === 'advertised') out.push(frame);
  });
  return out;
}

const novel = (n: number) => ({ type: 'object', properties: { [`field_${n}`]: { type: 'string', description: `novel ${n}` } } });
/** A novel schema big enough that compiling it takes well over 1 ms on any machine (80 constrained properties). */
const heavyNovel = (n: number) => ({
  type: 'object',
  properties: Object.fromEntries(
    Array.from({ length: 80 }, (_, p) => [`f${n}_${p}`, { type: 'string', minLength: p, maxLength: 100 + p, description: `novel ${n}.${p}` }]),
  ),
  required: [`f${n}_0`],
  additionalProperties: false,
});

describe('a host advertising through a real socket', () => {
  it('gets its novel schemas refused once its compile budget is spent, while schemas compiled before cost nothing', async () => {
    // Compiled once, on a server with the default budget (the cache of compiled schemas is the process's).
    const known = Array.from({ length: 3 }, (_, i) => tool(`k${i}`, novel(i)));
    const first = await startEndpoint();
    const seeder = await rawHost(first.url);
    await hello(seeder);
    const seeded = nextFrame(seeder, 'advertised');
    send(seeder, { type: 'advertise', tools: known });
    expect(((await seeded) as { accepted: unknown[] }).accepted).toHaveLength(3);
    // A host with 1 ms of compile time: its first batch uses it up, and nothing more is compiled.
    const h = await startEndpoint({ schemaCompileBudgetMs: 1, schemaCompileWindowMs: 3_600_000 });
    const ws = await rawHost(h.url);
    await hello(ws);
    const answers = replies(ws);
    send(ws, { type: 'advertise', tools: [...known, ...Array.from({ length: 40 }, (_, i) => tool(`t${i}`, heavyNovel(1_000 + i)))] });
    await waitFor(() => answers.length === 1, 'the advertised reply', 30_000);
    const { accepted, rejected } = answers[0] as { accepted: { name: string }[]; rejected: { name: string; reason: string }[] };
    // The known three, and at most the one novel schema a batch may start with 1 ms left (each takes more).
    expect(accepted.map((a) => a.name).slice(0, 3)).toEqual(['k0', 'k1', 'k2']);
    expect(accepted.length).toBeLessThanOrEqual(4);
    expect(rejected).toHaveLength(43 - accepted.length);
    // The budget refuses them either way: once it is used up, or (on a loaded machine) when the worker's
    // answer to the batch takes longer than the budget's 1 ms and the batch is charged and refused whole.
    expect(rejected.at(-1)!.reason).toMatch(
      /^not compiled: (host alpha has used its schema compile budget \(1 ms per 3600000 ms\); advertise again later|the schema compiler did not finish within 1 ms \(the schema compile budget\))$/,
    );
    expect(rejected.every((r) => /^not compiled: /.test(r.reason))).toBe(true);
    // Another host is not charged for it.
    const beta = await rawHost(h.url, BETA_TOKEN);
    await hello(beta);
    const betaReply = nextFrame(beta, 'advertised');
    send(beta, { type: 'advertise', tools: known });
    expect(((await betaReply) as { accepted: unknown[] }).accepted).toHaveLength(3);
  });

  it('refuses a schema whose validator code would exceed maxSchemaCodeBytes, with the reason', async () => {
    const h = await startEndpoint({ maxSchemaCodeBytes: 4_096 });
    const ws = await rawHost(h.url);
    await hello(ws);
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`p${i}`, { type: 'string', maxLength: i + 1 }])) };
    const reply = nextFrame(ws, 'advertised');
    send(ws, { type: 'advertise', tools: [tool('wide', wide), tool('small')] });
    const { accepted, rejected } = (await reply) as { accepted: { name: string }[]; rejected: { name: string; reason: string }[] };
    expect(accepted.map((a) => a.name)).toEqual(['small']);
    expect(rejected).toEqual([{ name: 'wide', reason: expect.stringMatching(/its validator is \d+ bytes of code, over the limit of 4096/) }]);
  });

  it('answers every advertise once: one is checked at a time, a newer one supersedes the one waiting', async () => {
    const h = await startEndpoint();
    const ws = await rawHost(h.url);
    await hello(ws);
    const answers = replies(ws);
    for (let n = 0; n < 3; n++) send(ws, { type: 'advertise', tools: [tool(`v${n}`, novel(100 + n))] });
    await waitFor(() => answers.length === 3, 'three replies', 30_000);
    const superseded = answers.find((a) => (a.rejected as { reason: string }[]).some((r) => r.reason === 'superseded by a newer advertise'));
    expect(superseded).toEqual({ type: 'advertised', accepted: [], rejected: [{ name: 'v1', reason: 'superseded by a newer advertise' }] });
    expect(answers.at(-1)!.accepted).toEqual([{ name: 'v2', as: 'alpha__v2' }]);
    expect(h.router.tools().map((t) => t.name)).toEqual(['alpha__v2']);
  });

  it('rate-limits the warnings about one host and reports the suppressed count when the session ends', async () => {
    const { logger, entries } = recordingLogger();
    const h = await startEndpoint({ logger, maxLogLinesPerHost: 5, logWindowMs: 3_600_000 });
    const ws = await rawHost(h.url);
    await hello(ws);
    for (let i = 0; i < 200; i++) send(ws, { type: 'result', id: `nobody-${i}`, stdout: '', stderr: '', exitCode: 0 });
    send(ws, { type: 'result', id: 'last', stdout: '', stderr: '', exitCode: 0 });
    ws.close();
    const warned = (e: LogEntry): boolean => e.level === 'warn';
    await waitFor(() => entries.some((e) => e.msg === 'host session ended'), 'the session to end');
    expect(entries.filter((e) => warned(e) && e.msg === 'result for an unknown or settled call dropped')).toHaveLength(5);
    expect(entries.filter(warned).map((e) => e.msg)).toContain('196 more warnings about this host suppressed');
  });
});
