/**
 * Work a peer can make expensive runs here, off the event loop: one worker thread (`offload-worker`)
 * per instance, started at the first job and ended after `idleMs` without one (its memory goes
 * with it). Jobs run one at a time in arrival order; a job that overruns its time, or a worker that
 * dies (e.g. out of its memory limit), fails that job only: the worker is ended and the next job
 * gets a fresh one. Never rejects. Neither the thread nor its timers keep a process alive.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { type ResourceLimits, Worker } from 'node:worker_threads';

/** Time a thread may take to load its code, ms. */
const START_TIMEOUT_MS = 30_000;

/** Outcome of one job: the worker's reply, or why there is none. */
export type JobOutcome<R> = { ok: true; reply: R } | { ok: false; failure: 'timeout' | 'crashed' | 'closed'; detail: string };

/** Settings of one offload worker. */
export interface OffloadOptions {
  /** Name in failure details, e.g. `decode`. */
  name: string;
  /** End the thread after this long without a job, ms. */
  idleMs: number;
  /** V8 heap limits of the thread: a job needing more fails (`crashed`) instead of growing the process. */
  resourceLimits: ResourceLimits;
  /** Nice value of the thread (Linux), 0–19: higher yields the CPU to the event loop sooner. */
  nice: number;
}

interface Job {
  id: number;
  message: object;
  transfer: ArrayBuffer[];
  timeoutMs: number;
  resolve: (outcome: JobOutcome<unknown>) => void;
}

/** The worker entry next to this module, in the form this module runs in (TypeScript, ESM or the CLI bundle). */
function startThread(resourceLimits: ResourceLimits, nice: number): Worker {
  const workerData = { nice };
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // From TypeScript sources (tests, pnpm scripts): tsx has to be registered inside the thread.
    // `tsx/esm/api` resolves to its CommonJS build here; the thread needs the ESM one beside it.
    const tsx = pathToFileURL(createRequire(here).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
    const entry = new URL('./offload-worker.ts', here).href;
    const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
    return new Worker(boot, { eval: true, execArgv: ['--conditions=@toolwire/source'], resourceLimits, workerData });
  }
  // Built: `offload-worker.js` beside this file; in the CLI bundle `offload-worker.cjs` beside it.
  return new Worker(new URL(here.endsWith('.cjs') ? './offload-worker.cjs' : './offload-worker.js', here), { resourceLimits, workerData });
}

/** One lazily started worker thread and its queue of jobs. */
export class OffloadWorker {
  readonly #options: OffloadOptions;
  readonly #queue: Job[] = [];
  #thread: Worker | undefined;
  /** The thread has loaded its code (job time is counted from then: start-up is not the job's). */
  #ready = false;
  #current: Job | undefined;
  #timer: NodeJS.Timeout | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #nextId = 1;
  #closed = false;
  /** Threads started so far (for tests and diagnostics). */
  started = 0;

  constructor(options: OffloadOptions) {
    this.#options = { ...options };
  }

  /** True while a thread exists. */
  get running(): boolean {
    return this.#thread !== undefined;
  }

  /** Change how long the thread stays without a job, ms (from the next idle period on). */
  set idleMs(ms: number) {
    this.#options.idleMs = ms;
  }

  /**
   * Run `message` on the worker; `transfer`: buffers moved to it (unusable here afterwards). The job
   * gets `timeoutMs` once it starts. Resolves with the reply or the failure; never rejects.
   */
  run<R>(message: object, timeoutMs: number, transfer: ArrayBuffer[] = []): Promise<JobOutcome<R>> {
    if (this.#closed) return Promise.resolve({ ok: false, failure: 'closed', detail: 'the server is closing' });
    return new Promise<JobOutcome<R>>((resolve) => {
      this.#queue.push({ id: this.#nextId++, message, transfer, timeoutMs, resolve: resolve as Job['resolve'] });
      this.#pump();
    });
  }

  /** Fail every job (`closed`) and end the thread. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    const jobs = this.#queue.splice(0);
    this.#finish({ ok: false, failure: 'closed', detail: 'the server is closing' });
    for (const job of jobs) job.resolve({ ok: false, failure: 'closed', detail: 'the server is closing' });
    await this.#stopThread();
  }

  #pump(): void {
    if (this.#current !== undefined || this.#closed) return;
    const job = this.#queue.shift();
    if (job === undefined) {
      this.#armIdle();
      return;
    }
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    this.#current = job;
    try {
      this.#ensureThread();
    } catch (error) {
      this.#fail('crashed', error instanceof Error ? error.message : String(error));
      return;
    }
    if (this.#ready) this.#send(job);
  }

  /** Hand `job` to the ready thread and start its clock. */
  #send(job: Job): void {
    try {
      this.#thread!.postMessage({ ...job.message, id: job.id }, job.transfer);
    } catch (error) {
      this.#fail('crashed', error instanceof Error ? error.message : String(error));
      return;
    }
    this.#timer = setTimeout(() => this.#fail('timeout', `no answer within ${job.timeoutMs} ms`), job.timeoutMs);
    this.#timer.unref();
  }

  #ensureThread(): Worker {
    if (this.#thread !== undefined) return this.#thread;
    const thread = startThread(this.#options.resourceLimits, this.#options.nice);
    this.started++;
    this.#ready = false;
    // Start-up is bounded too: a thread that cannot load fails the job waiting for it.
    this.#timer = setTimeout(() => this.#fail('crashed', `the ${this.#options.name} worker did not start within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    this.#timer.unref();
    thread.on('message', (reply: { id?: unknown; ready?: unknown }) => {
      if (thread !== this.#thread) return;
      if (reply.ready === true) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#ready = true;
        if (this.#current !== undefined) this.#send(this.#current);
        return;
      }
      if (this.#current === undefined || reply.id !== this.#current.id) return;
      this.#finish({ ok: true, reply });
    });
    thread.on('error', (error) => {
      if (thread === this.#thread) this.#fail('crashed', error.message);
    });
    thread.on('exit', (code) => {
      if (thread === this.#thread) this.#fail('crashed', `the worker exited with code ${code}`);
    });
    // After the listeners: adding a 'message' listener refs the thread's port again.
    thread.unref(); // an idle worker never keeps the process alive
    this.#thread = thread;
    return thread;
  }

  /** The current job failed: end the thread (it may still be busy with it) and go on with the next. */
  #fail(failure: 'timeout' | 'crashed', detail: string): void {
    void this.#stopThread();
    this.#finish({ ok: false, failure, detail });
  }

  #finish(outcome: JobOutcome<unknown>): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const job = this.#current;
    this.#current = undefined;
    job?.resolve(outcome);
    this.#pump();
  }

  #armIdle(): void {
    if (this.#thread === undefined || this.#idleTimer !== undefined) return;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#current === undefined && this.#queue.length === 0) void this.#stopThread();
    }, this.#options.idleMs);
    this.#idleTimer.unref();
  }

  async #stopThread(): Promise<void> {
    const thread = this.#thread;
    this.#thread = undefined;
    this.#ready = false;
    if (thread === undefined) return;
    try {
      await thread.terminate();
    } catch {
      // already gone
    }
  }
}
