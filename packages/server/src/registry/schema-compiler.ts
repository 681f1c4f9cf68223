/**
 * Compiling the schemas of a host's `advertise`, within that host's budget and off the event loop:
 * 1. a schema text compiled before (by any host) costs nothing: the cache (`schema-cache.ts`);
 * 2. a host with no compile time left (`compile-budget.ts`) gets its tools refused with the reason;
 * 3. every other schema compiles in the offload worker to standalone code (at most `maxCodeBytes`),
 *    in batches of at most {@link BATCH_SCHEMAS} (so other hosts' batches take turns with this
 *    host's); the worker starts no compile once the host's remaining budget is spent. Even the
 *    smallest schema goes there: ajv's first compile on an instance compiles the meta-schema.
 * The event loop only parses each schema text, instantiates each validator and runs it once (V8
 * compiles a function at its first call), each step in a turn of its own. Every compile's time in
 * the worker, and instantiating, is charged to the host.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../options.js';
import type { CompileJob, CompileReply } from '../worker/jobs.js';
import type { OffloadWorker } from '../worker/offload.js';
import { instantiate } from './ajv-setup.js';
import { type CompileBudgetOptions, CompileBudgets } from './compile-budget.js';
import { cachedOutcome, type Compiled, compiledFor, rememberOutcome } from './schema-cache.js';
import { compileRefusal, type ExaminedOk, type ToolCheck, toolSpecOf } from './validate-tool.js';

/** Schemas sent to the worker in one job at most. */
export const BATCH_SCHEMAS = 16;

/** What the compiler reads (ToolwireServerOptions `schemaCompileBudgetMs`, `schemaCompileWindowMs`, `maxSchemaCodeBytes`). */
export interface SchemaCompilerOptions extends CompileBudgetOptions {
  /** Largest validator code a schema may compile to, bytes. */
  maxCodeBytes: number;
  logger: Logger;
}

/** One schema on its way: the examined tool, its parsed schema, and its outcome once known. */
interface Pending {
  examined: ExaminedOk;
  schema: Record<string, unknown>;
  /** The compile's outcome (a refusal here is the schema's: "does not compile"). */
  outcome?: Compiled;
  /** Not compiled, and why (the budget, the worker). */
  notCompiled?: string;
}

/** The budgeted, cached, off-loop compiler of advertised schemas. One per server. */
export class SchemaCompiler {
  readonly #options: SchemaCompilerOptions;
  readonly #worker: OffloadWorker;
  readonly #budgets: CompileBudgets;

  constructor(options: SchemaCompilerOptions, worker: OffloadWorker, now?: () => number) {
    this.#options = options;
    this.#worker = worker;
    this.#budgets = new CompileBudgets(options, now);
  }

  /** Compile time `host` may still spend now, ms. */
  budgetLeft(host: string): number {
    return this.#budgets.left(host);
  }

  /**
   * Check the schemas of `tools`, examined tools of `host`: each tool's spec when its schema
   * compiles (the validator is then cached for the executor), else the refusal with its reason, in
   * order. `undefined` when `isCurrent()` turned false meanwhile. Never rejects.
   */
  async compileAll(host: string, tools: readonly ExaminedOk[], isCurrent: () => boolean): Promise<ToolCheck[] | undefined> {
    const pending: Pending[] = [];
    for (const examined of tools) {
      // A schema object compiled before (the same advertise frame from another host of a fleet,
      // `advertise-cache.ts`): nothing to parse or look up.
      const known = examined.schema === undefined ? undefined : compiledFor(examined.schema);
      if (known !== undefined) {
        pending.push({ examined, schema: examined.schema!, outcome: { ok: true, validate: known } });
        continue;
      }
      await nextTurn(); // parsing a schema text of up to maxSchemaBytes: one per turn
      if (!isCurrent()) return undefined;
      const schema = examined.schema ?? (JSON.parse(examined.text) as Record<string, unknown>);
      const cached = cachedOutcome(examined.text);
      if (cached?.ok) rememberOutcome(examined.text, cached, schema);
      pending.push({ examined, schema, ...(cached !== undefined && { outcome: cached }) });
    }
    const misses = pending.filter((p) => p.outcome === undefined);
    for (let i = 0; i < misses.length; i += BATCH_SCHEMAS) {
      if (!isCurrent()) return undefined;
      await this.#compileBatch(host, misses.slice(i, i + BATCH_SCHEMAS), isCurrent);
    }
    if (!isCurrent()) return undefined;
    return pending.map(({ examined, schema, outcome, notCompiled }): ToolCheck => {
      if (outcome?.ok) return { ok: true, tool: toolSpecOf(examined, schema), text: examined.text };
      if (outcome !== undefined) return compileRefusal(examined, outcome.reason);
      return { ok: false, name: examined.name, reason: notCompiled ?? 'not compiled' };
    });
  }

  /** Compile `batch` in the worker (or refuse it for the budget), then instantiate each validator. */
  async #compileBatch(host: string, batch: Pending[], isCurrent: () => boolean): Promise<void> {
    const left = this.#budgets.left(host);
    const refuse = (reason: string): void => {
      for (const p of batch) if (p.outcome === undefined) p.notCompiled ??= reason;
    };
    if (left <= 0) return refuse(this.#budgets.refusal(host));
    // The worker starts no compile after `budgetMs` of this job; one compile may overrun it, up
    // to the budget's full size, after which the thread is ended.
    const timeoutMs = this.#options.budgetMs;
    const job: Omit<CompileJob, 'id'> = { kind: 'compile', texts: batch.map((p) => p.examined.text), maxCodeBytes: this.#options.maxCodeBytes, budgetMs: left };
    const outcome = await this.#worker.run<CompileReply>(job, timeoutMs);
    if (!outcome.ok) {
      if (outcome.failure === 'timeout') {
        this.#budgets.charge(host, timeoutMs);
        return refuse(`not compiled: the schema compiler did not finish within ${timeoutMs} ms (the schema compile budget)`);
      }
      this.#options.logger.warn({ host, failure: outcome.failure, detail: outcome.detail }, 'schema compiler worker failed');
      return refuse(`not compiled: the schema compiler failed (${outcome.detail})`);
    }
    const results = outcome.reply.results;
    for (const [k, p] of batch.entries()) {
      const result = results[k];
      if (result === undefined || result.skipped) continue; // not reached: the budget ran out
      this.#budgets.charge(host, result.ms);
      if (!result.ok) {
        p.outcome = { ok: false, reason: result.reason };
        rememberOutcome(p.examined.text, p.outcome);
        continue;
      }
      await nextTurn();
      if (!isCurrent()) return;
      p.outcome = await this.#instantiate(host, result.source);
      rememberOutcome(p.examined.text, p.outcome, p.schema, result.source.length);
    }
    refuse(this.#budgets.refusal(host));
  }

  /** Turn worker code into the validator, then run it once in the next turn; both charged to `host`. */
  async #instantiate(host: string, source: string): Promise<Compiled> {
    let began = performance.now();
    let compiled: Compiled;
    try {
      compiled = { ok: true, validate: instantiate(source) };
    } catch (error) {
      this.#options.logger.error({ host, err: error }, 'standalone validator code did not instantiate');
      compiled = { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
    this.#budgets.charge(host, performance.now() - began);
    if (!compiled.ok) return compiled;
    await nextTurn();
    began = performance.now();
    compiled.validate({});
    this.#budgets.charge(host, performance.now() - began);
    return compiled;
  }
}
