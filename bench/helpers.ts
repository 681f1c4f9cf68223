/**
 * The orchestrator side of the bench control channel: start a helper process
 * (`node --expose-gc --conditions=@toolwire/source --import tsx bench/proc/<name>.ts`) with an IPC channel, send it commands and
 * await its replies, and stop it. Every helper started here is stopped by {@link stopAll}.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS } from '../test/source-node.js';

export const benchDir = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(benchDir, '..');

type Message = { seq?: number; event?: string; error?: string; [key: string]: unknown };

/**
 * CPU the server-role processes (`*-server` helpers: the load and the server under test, or the
 * baseline's) are pinned to with `taskset`, or `undefined` for no pinning (see {@link pinServers}).
 */
let serverCpu: string | undefined;

/**
 * Pin every server-role helper started from now on to CPU `cpu` (`taskset -c`); `undefined` turns
 * pinning off. Tool-host helpers are never pinned: a tool host's spawn helper and its tools inherit
 * its CPU mask, and the spawn floor (s5) runs unpinned. Why pin at all: bench/README.md, "Method".
 */
export function pinServers(cpu: string | undefined): void {
  serverCpu = cpu;
}

/**
 * Where a helper runs: `'server'` (the default: the server CPU for a `*-server` helper, unpinned
 * otherwise), `'other'` (the CPU besides the server CPU, for a second machine's role: the cluster
 * scenario's other node), or `'free'` (never pinned). With pinning off every helper is unpinned.
 */
export type Placement = 'server' | 'other' | 'free';

/** The CPU list for `placement` of helper `name`, or `undefined` for no pinning. */
export function cpuFor(name: string, placement: Placement = 'server'): string | undefined {
  if (serverCpu === undefined || placement === 'free') return undefined;
  if (placement === 'other') return serverCpu === '0' ? '1' : '0';
  return name.endsWith('-server') ? serverCpu : undefined;
}

const live = new Set<Helper>();

/** One helper process. */
export class Helper {
  readonly name: string;
  get pid(): number | undefined {
    return this.#child.pid;
  }
  readonly #child: ChildProcess;
  readonly #waiting = new Map<number, { resolve(m: Message): void; reject(e: Error): void }>();
  readonly #exited: Promise<void>;
  #seq = 0;
  #ready: Promise<Message>;

  private constructor(name: string, env: Record<string, string>, built: boolean, placement: Placement) {
    this.name = name;
    // BENCH_NODE_ARGS adds node flags to every helper, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
    const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a.length > 0);
    // `built`: the packages resolve to their `dist/` (tsc's output, as installed); the helper's own
    // file still loads through tsx. From `src/`, tsx compiles with esbuild's keepNames, which gives
    // every named closure a property dictionary of its own (~256 bytes each).
    const source = built ? SOURCE_NODE_ARGS.filter((a) => !a.startsWith('--conditions=')) : SOURCE_NODE_ARGS;
    const nodeArgs = ['--expose-gc', ...extra, ...source, join(benchDir, 'proc', `${name}.ts`)];
    const cpu = cpuFor(name, placement);
    this.#child = spawn(cpu === undefined ? process.execPath : 'taskset', cpu === undefined ? nodeArgs : ['-c', cpu, process.execPath, ...nodeArgs], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced', // latencies travel as Float64Array
    });
    this.#exited = once(this.#child, 'exit').then(() => undefined);
    this.#ready = new Promise((resolve, reject) => {
      this.#child.on('message', (raw) => {
        const m = raw as Message;
        if (m.event === 'ready') return resolve(m);
        const waiter = m.seq === undefined ? undefined : this.#waiting.get(m.seq);
        if (!waiter) return;
        this.#waiting.delete(m.seq!);
        if (m.error) waiter.reject(new Error(`${this.name}: ${m.error}`));
        else waiter.resolve(m);
      });
      this.#child.on('exit', (code, signal) => {
        const error = new Error(`${this.name} exited (code ${code}, signal ${signal})`);
        reject(error);
        for (const w of this.#waiting.values()) w.reject(error);
        this.#waiting.clear();
      });
    });
    live.add(this);
  }

  /**
   * Start helper `bench/proc/<name>.ts` and wait for its `ready` message (at most `timeoutMs`);
   * `built`: the packages from `dist/` (see the constructor); `placement`: its CPU ({@link Placement}).
   */
  static async start(
    name: string,
    env: Record<string, string> = {},
    timeoutMs = 120_000,
    built = false,
    placement: Placement = 'server',
  ): Promise<{ helper: Helper; ready: Message }> {
    const helper = new Helper(name, env, built, placement);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} not ready within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return { helper, ready: await Promise.race([helper.#ready, timeout]) };
    } catch (error) {
      await helper.stop();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Send `{cmd, ...args}` and await the reply. */
  request(cmd: string, args: Record<string, unknown> = {}): Promise<Message> {
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#waiting.set(seq, { resolve, reject });
      this.#child.send({ seq, cmd, ...args });
    });
  }

  /** Disconnect (the helper exits on its own); SIGKILL after 3 s. */
  async stop(): Promise<void> {
    live.delete(this);
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    if (this.#child.connected) this.#child.disconnect();
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 3_000);
    await this.#exited;
    clearTimeout(timer);
  }
}

let serverBuilt = false;

/**
 * Build the server's packages (`dist/`, as installed) once per bench run, for helpers started with
 * `built` (a `dist/` left from an earlier checkout would measure old code).
 */
export function buildServerOnce(): void {
  if (serverBuilt) return;
  execFileSync('pnpm', ['--filter', '@toolwire/server...', 'build'], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  serverBuilt = true;
}

/** Stop every helper still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((h) => h.stop()));
}
