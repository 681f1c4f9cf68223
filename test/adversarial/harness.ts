/**
 * Shared pieces of the adversarial suite (issue 3): server-side socket timestamps, a recording
 * logger, a raw-host driver that answers calls by hand (a @toolwire/testing rogue host), the fixture host process, and process
 * liveness that treats zombies as dead (the byte-level WebSocket client lives in `raw-socket.ts`).
 * Everything opened here is torn down through `defer` (test/helpers.ts).
 */
import dc from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '@toolwire/server';
import type { WebSocket } from 'ws';
import { type RogueTarget, type TestServer, startRogueHost } from '@toolwire/testing';
import { defer, repoRoot, waitFor } from '../helpers.js';

// ---- server-side sockets ---------------------------------------------------------------------

/** One TCP connection accepted by a server in this process, with the moments its peer went away. */
export interface ServerSocket {
  socket: Socket;
  openedAt: number;
  /** FIN received (`'end'`) or the socket closed/errored, whichever came first (performance.now()). */
  goneAt?: number;
}

/**
 * Record every TCP connection any `net.Server` of this process accepts (diagnostics channel
 * `net.server.socket`), so a test can measure from the moment the server saw a peer go away.
 */
export function trackServerSockets(): ServerSocket[] {
  const seen: ServerSocket[] = [];
  const onSocket = (message: unknown): void => {
    const socket = (message as { socket: Socket }).socket;
    const entry: ServerSocket = { socket, openedAt: performance.now() };
    const gone = (): void => {
      entry.goneAt ??= performance.now();
    };
    // Prepended so the moment is taken before ws (or anyone) reacts to the same event.
    socket.prependListener('end', gone);
    socket.prependListener('close', gone);
    socket.prependListener('error', gone);
    seen.push(entry);
  };
  dc.subscribe('net.server.socket', onSocket);
  defer(() => void dc.unsubscribe('net.server.socket', onSocket));
  return seen;
}

/** The server-side socket whose peer is the local port `remotePort`. */
export function serverSideOf(sockets: ServerSocket[], localPort: number): ServerSocket | undefined {
  return sockets.find((s) => s.socket.remotePort === localPort);
}

// ---- logging -----------------------------------------------------------------------------------

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: unknown;
  msg: unknown;
}

/** A logger that keeps every call; `errors()` lists error-level entries (a guard caught a throw). */
export function recordingLogger(): { logger: Logger; entries: LogEntry[]; errors: () => LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (obj: unknown, msg?: unknown) => void entries.push({ level, obj, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  return { logger, entries, errors: () => entries.filter((e) => e.level === 'error') };
}

// ---- raw host driver ---------------------------------------------------------------------------

export const SLOW = { name: 'slow', description: 'answers only when told', inputSchema: { type: 'object' } };

/** A raw `ws` host that has said hello and advertised `tools`; `calls` receives every `call` frame. */
export interface DrivenHost {
  ws: WebSocket;
  /** Call frames by wire id, in arrival order. */
  calls: Map<string, Record<string, unknown>>;
  /** Cancel frames received, in order. */
  cancels: Record<string, unknown>[];
  /** Resolves with the next call frame whose input matches `tag` (input.tag), or the next one when no tag. */
  nextCall(tag?: unknown): Promise<Record<string, unknown>>;
  /** Send a `result` frame for `id`. */
  answer(id: string, stdout?: string, exitCode?: number): void;
}

/**
 * Connect a raw host as `name` to a kit server (or to `{url, token}`), hello, advertise `tools` and
 * start collecting frames: a @toolwire/testing rogue host whose calls are answered by hand (closed
 * at `cleanup()`); `via` is a fault proxy's URL to dial through.
 */
export async function drivenHost(server: TestServer | RogueTarget, tools: unknown[] = [SLOW], name = 'alpha', via?: string): Promise<DrivenHost> {
  const calls = new Map<string, Record<string, unknown>>();
  const waiters: { tag: unknown; resolve: (f: Record<string, unknown>) => void }[] = [];
  const rogue = await startRogueHost(
    server,
    {
      name,
      tools,
      onCall: (call) => {
        const frame = call as unknown as Record<string, unknown>;
        calls.set(call.id, frame);
        const tag = (call.input as { tag?: unknown } | null)?.tag;
        const i = waiters.findIndex((w) => w.tag === undefined || w.tag === tag);
        if (i >= 0) waiters.splice(i, 1)[0]!.resolve(frame);
      },
    },
    { via },
  );
  defer(() => rogue.close());
  return {
    ws: rogue.ws,
    calls,
    cancels: rogue.cancels as unknown as Record<string, unknown>[],
    nextCall: (tag) => new Promise((resolve) => waiters.push({ tag, resolve })),
    answer: (id, stdout = '', exitCode = 0) => rogue.result(id, { stdout, exitCode }),
  };
}

// ---- processes ---------------------------------------------------------------------------------

/** The adversarial suite's host tools, for `startHost(server, ADVERSARIAL_TOOLS, {process: true})` (test/adversarial/fixtures/host-tools.ts). */
export const ADVERSARIAL_TOOLS = join(repoRoot, 'test', 'adversarial', 'fixtures', 'host-tools.ts');

/** True while `pid` exists and is not a zombie (Linux /proc; elsewhere `kill(pid, 0)`). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** The process group of `pid` (Linux /proc), or `undefined` when it is gone. */
export function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}

/** Read the pids a fixture tool appended to `file` once `count` are there. */
export async function pidsIn(file: string, count: number, timeoutMs = 10_000): Promise<number[]> {
  return waitFor(
    () => {
      let lines: string[] = [];
      try {
        lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      } catch {
        // not written yet
      }
      return lines.length >= count ? lines.map(Number) : undefined;
    },
    `${count} pids in ${file}`,
    timeoutMs,
  );
}

/** SIGKILL `pids` that are still running (teardown of deliberately escaped processes). */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

export { waitFor };
export { Opcode, buildFrame, rawSocketAdvertise, rawSocketHost, type FrameSpec, type RawSocketHost, type ServerFrame } from './raw-socket.js';
