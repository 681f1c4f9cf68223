/**
 * A hostile toolwire server for attacks on a tool host (issue 11): a `ws` server on 127.0.0.1 port 0
 * that welcomes a real `toolwire host` process (run from source), accepts its advertise, then sends
 * whatever the attack wants — `call` frames by the thousand, `cancel`s — and records every `result`
 * with the time it arrived. Linux only for the process readings (/proc).
 *
 * Every process of an attack (the host, its spawn helper and reaper, the tools) carries
 * `TOOLWIRE_SOAK=<run id>` in its environment, so `markedProcesses` (../procs.ts) finds what is left.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type WebSocket, WebSocketServer } from 'ws';
import { SOURCE_NODE_ARGS } from '../../source-node.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const CLI = join(repoRoot, 'packages', 'cli', 'src', 'main.ts');

/** A `result` as it arrived: `at` is `Date.now()` on arrival. */
export interface Answer {
  exitCode: number;
  stderr: string;
  failure?: string;
  at: number;
}

/** The real host process under attack. */
export interface HostProcess {
  child: ChildProcess;
  pid: number;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
}

/** Children of `pid` (Linux `/proc/<pid>/task/<pid>/children`); empty when it is gone. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The command line of `pid`, or '' when it is gone. */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
  } catch {
    return '';
  }
}

/** True when `pid`'s environment has `TOOLWIRE_CALL_ID` (a tool, not the helper or the reaper). */
function isTool(pid: number): boolean {
  try {
    return `\0${readFileSync(`/proc/${pid}/environ`, 'latin1')}`.includes('\0TOOLWIRE_CALL_ID=');
  } catch {
    return false;
  }
}

/** Peak resident set size (VmHWM) of `pid` in KiB, or 0 when it is gone. */
export function peakRssKiB(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** One hostile server and the host processes it started. `close()` ends them all. */
export class HostileServer {
  /** `TOOLWIRE_SOAK` value of every process of this server's hosts. */
  readonly runId = `attack-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  /** Scratch folder (manifest, marker files); removed by `close()`. */
  readonly dir = mkdtempSync(join(tmpdir(), 'toolwire-attack-'));
  readonly answers = new Map<string, Answer>();
  readonly #waiters = new Set<() => void>();
  readonly #hosts: ChildProcess[] = [];
  #ws: WebSocket | undefined;
  #advertised: (() => void) | undefined;

  private constructor(readonly wss: WebSocketServer) {
    wss.on('connection', (ws) => this.#accept(ws));
  }

  static async start(): Promise<HostileServer> {
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      maxPayload: 64 * 1024 * 1024,
      handleProtocols: (protocols) => (protocols.has('toolwire.v1') ? 'toolwire.v1' : false),
    });
    await once(wss, 'listening');
    return new HostileServer(wss);
  }

  get url(): string {
    const address = this.wss.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected address');
    return `ws://127.0.0.1:${address.port}`;
  }

  /**
   * Start `toolwire host` (from source) with `manifest` (written to the scratch folder) and extra
   * flags; resolves once it advertised. Its tools get `ATTACK_MARKS` (a file a tool may append
   * `<call id> <ms since the epoch>` lines to) in their environment.
   */
  async spawnHost(manifest: object, args: string[] = []): Promise<HostProcess> {
    const path = join(this.dir, 'tools.json');
    writeFileSync(path, JSON.stringify(manifest));
    const advertised = new Promise<void>((resolve) => (this.#advertised = resolve));
    const child = spawn(
      process.execPath,
      [...SOURCE_NODE_ARGS, CLI, 'host', '--manifest', path, '--server', this.url, '--name', 'attacked', '--root', this.dir, '--log-level', 'warn', ...args],
      {
        cwd: repoRoot, // where tsx resolves
        env: { ...process.env, TOOLWIRE_SOAK: this.runId, ATTACK_MARKS: this.marksFile, TOOLWIRE_TOKEN: '', TOOLWIRE_TOKEN_FILE: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    this.#hosts.push(child);
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-20_000)));
    const exited = once(child, 'exit').then(() => {
      throw new Error(`toolwire host exited before it advertised: ${log}`);
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`toolwire host did not advertise within 30 s: ${log}`)), 30_000)));
    try {
      await Promise.race([advertised, exited, late]);
    } finally {
      clearTimeout(timer);
      exited.catch(() => {});
    }
    return { child, pid: child.pid!, stderr: () => log };
  }

  /** Where tools append their start markers. */
  get marksFile(): string {
    return join(this.dir, 'marks');
  }

  /** Start markers written so far: call id → ms since the epoch. */
  marks(): Map<string, number> {
    const marks = new Map<string, number>();
    let text: string;
    try {
      text = readFileSync(this.marksFile, 'utf8');
    } catch {
      return marks;
    }
    for (const line of text.split('\n')) {
      const [id, at] = line.split(' ');
      if (id && at) marks.set(id, Number(at));
    }
    return marks;
  }

  /** Send a `call` frame; `cb` runs once it was handed to the socket (for paced sends). Returns its size in bytes. */
  call(id: string, tool: string, input: unknown, deadlineMs: number, cb?: () => void): number {
    const frame = JSON.stringify({ type: 'call', id, tool, input, workspace: '/', agent: 'attacker', deadlineMs });
    this.#socket().send(frame, cb);
    return frame.length;
  }

  cancel(id: string, reason: 'stop' | 'deadline' = 'stop'): void {
    this.#socket().send(JSON.stringify({ type: 'cancel', id, reason }));
  }

  /** Resolves when `check()` holds (checked at every answer), or rejects after `timeoutMs`. */
  async until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (check()) return;
    let wake!: () => void;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        wake = () => check() && resolve();
        this.#waiters.add(wake);
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${this.answers.size} answers)`)), timeoutMs);
      });
    } finally {
      this.#waiters.delete(wake);
      clearTimeout(timer);
    }
  }

  /**
   * Tool processes running now for `host`: the children of its spawn helper and the host itself
   * that carry `TOOLWIRE_CALL_ID` — one group leader per call whose tool runs.
   */
  tools(host: HostProcess): number[] {
    const out: number[] = [];
    for (const child of childrenOf(host.pid)) {
      if (cmdline(child).includes('spawn-helper')) out.push(...childrenOf(child).filter(isTool));
      else if (isTool(child)) out.push(child);
    }
    return out;
  }

  /** The host's spawn helper, if one runs. */
  helperOf(host: HostProcess): number | undefined {
    return childrenOf(host.pid).find((p) => cmdline(p).includes('spawn-helper'));
  }

  /** SIGTERM the host and wait (bounded) for it to exit; SIGKILL after 10 s. */
  async stopHost(host: HostProcess): Promise<void> {
    if (host.child.exitCode !== null || host.child.signalCode !== null) return;
    const exited = once(host.child, 'exit');
    host.child.kill('SIGTERM');
    const timer = setTimeout(() => host.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** Kill every host still running, close the server, remove the scratch folder. */
  async close(): Promise<void> {
    for (const child of this.#hosts) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  #socket(): WebSocket {
    if (this.#ws === undefined) throw new Error('no host connected');
    return this.#ws;
  }

  #accept(ws: WebSocket): void {
    this.#ws = ws;
    ws.on('error', () => {});
    ws.on('message', (data: Buffer) => {
      const at = Date.now();
      const m = JSON.parse(data.toString('utf8')) as { type: string; id?: string; tools?: { name: string }[]; exitCode?: number; stderr?: string; failure?: string };
      if (m.type === 'hello') {
        ws.send(
          JSON.stringify({
            type: 'welcome',
            protocol: 1,
            host: 'attacked',
            heartbeatMs: 60_000,
            limits: { maxPayload: 64 * 1024 * 1024, maxInFlight: 100_000, maxTools: 256 },
          }),
        );
      } else if (m.type === 'advertise') {
        ws.send(JSON.stringify({ type: 'advertised', accepted: (m.tools ?? []).map((t) => ({ name: t.name, as: `attacked__${t.name}` })), rejected: [] }));
        this.#advertised?.();
      } else if (m.type === 'result' && m.id !== undefined) {
        const answer: Answer = { exitCode: m.exitCode ?? -1, stderr: m.stderr ?? '', at };
        if (m.failure !== undefined) answer.failure = m.failure;
        if (!this.answers.has(m.id)) this.answers.set(m.id, answer);
        for (const wake of this.#waiters) wake();
      }
    });
  }
}
