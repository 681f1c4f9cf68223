/**
 * Integration-test harness: a real server on 127.0.0.1 port 0, real tool-host processes, raw
 * sockets, and bounded waits. Everything started here is tracked and torn down by `cleanup()`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type EventEmitter, once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { ToolwireServer, type ToolwireServerOptions } from '@toolwire/server';
import type { ServerSeams } from '../packages/server/src/config.js';
import { SOURCE_NODE_ARGS } from './source-node.js';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const cliPath = join(repoRoot, 'packages', 'cli', 'src', 'main.ts');

export const HOST_TOKEN = 'host-token-aaaaaaaaaaaaaaaaaaaaaaaa';
export const HOST2_TOKEN = 'host-token-bbbbbbbbbbbbbbbbbbbbbbbb';
export const CALLER_TOKEN = 'caller-token-cccccccccccccccccccccc';

const cleanups: (() => Promise<void> | void)[] = [];

/** Register a teardown step; `cleanup()` runs them in reverse order. */
export function defer(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

/** Run and forget every registered teardown (call in afterEach). */
export async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    const fn = cleanups.pop()!;
    try {
      await fn();
    } catch {
      // teardown must go on
    }
  }
}

/** Poll `check` until it returns a truthy value, at most `timeoutMs`; throws with `what` on expiry. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 5_000, everyMs = 10): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Started {
  server: ToolwireServer;
  url: string;
  mcpUrl: string;
}

/**
 * Start a server on 127.0.0.1:0 with hosts `alpha` (HOST_TOKEN), `beta` (HOST2_TOKEN) and caller
 * `agent`; `seams` are the server's internal test seams.
 */
export async function startServer(options: ToolwireServerOptions = {}, seams: ServerSeams = {}): Promise<Started> {
  const server = new ToolwireServer(
    {
      hosts: [
        { name: 'alpha', token: HOST_TOKEN },
        { name: 'beta', token: HOST2_TOKEN },
      ],
      callers: [{ name: 'agent', token: CALLER_TOKEN }],
      ...options,
    },
    seams,
  );
  const address = await server.listen(0, '127.0.0.1');
  defer(() => server.close());
  return { server, url: address.url, mcpUrl: address.mcpUrl };
}

/** Spawn a node process running TypeScript from src (`SOURCE_NODE_ARGS`) with tracked teardown (SIGKILL to its group if still alive). */
export function spawnTs(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  return tracked(child);
}

/**
 * Read `child`'s stdout and stderr as UTF-8 and, at teardown, kill its process group (SIGCONT,
 * then SIGKILL) if it is still alive. `child` must be spawned `detached` (a group of its own) with
 * piped stdout and stderr. Returns `child`.
 */
export function tracked(child: ChildProcess): ChildProcess {
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  defer(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGCONT');
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await once(child, 'exit');
    }
  });
  return child;
}

/**
 * Collect a child's stdout/stderr until it has exited and both are closed, bounded: rejects, after
 * killing it (SIGKILL), when that takes over `timeoutMs` (default 15000). It waits for `close`, not
 * `exit`: at `exit` the child's last output may still be in the pipes, unread (Node's
 * `child_process` docs), and a test would see it cut or empty.
 */
export async function finish(child: ChildProcess, timeoutMs = 15_000): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: string) => (stdout += d));
  child.stderr!.on('data', (d: string) => (stderr += d));
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  void closed.catch(() => undefined); // an 'error' after the bound: reported by the bound
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      const what = child.exitCode === null && child.signalCode === null ? 'did not exit' : 'exited but its stdout/stderr did not close';
      reject(new Error(`the child process ${what} within ${timeoutMs} ms (killed); stderr so far: ${JSON.stringify(stderr.slice(-1000))}`));
    }, timeoutMs);
  });
  try {
    const [code] = await Promise.race([closed, bound]);
    return { code, stdout, stderr, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** Open a raw WebSocket as a host (no client library), tracked for teardown. */
export async function rawHost(url: string, token = HOST_TOKEN, options: { autoPong?: boolean } = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, autoPong: options.autoPong ?? true });
  ws.on('error', () => {});
  defer(() => {
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  });
  await once(ws, 'open');
  return ws;
}

/** Next parsed JSON frame of `type` on a raw socket. */
export function nextFrame(ws: WebSocket, type: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: Buffer) => {
      const msg = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      if (msg.type === type) {
        ws.off('message', onMessage);
        ws.off('close', onClose);
        resolve(msg);
      }
    };
    const onClose = () => reject(new Error(`socket closed before a ${type} frame`));
    ws.on('message', onMessage);
    ws.on('close', onClose);
  });
}

/** Say hello and advertise `tools` on a raw socket; resolves with the `advertised` frame. */
export async function rawAdvertise(ws: WebSocket, tools: unknown[]): Promise<Record<string, unknown>> {
  const welcome = nextFrame(ws, 'welcome');
  ws.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'raw-test' }));
  await welcome;
  const advertised = nextFrame(ws, 'advertised');
  ws.send(JSON.stringify({ type: 'advertise', tools }));
  return advertised;
}

/** A temporary directory removed at cleanup. */
export async function tempDir(prefix = 'toolwire-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  defer(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');

/** Resolves with the first match of `pattern` in `stream`'s accumulated text (bounded). */
export function waitForText(stream: EventEmitter, pattern: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => {
      stream.off('data', onData);
      reject(new Error(`no ${pattern} within ${timeoutMs} ms: ${text}`));
    }, timeoutMs);
    const onData = (d: string): void => {
      text += d;
      const match = pattern.exec(text);
      if (match) {
        clearTimeout(timer);
        stream.off('data', onData);
        resolve(match);
      }
    };
    stream.on('data', onData);
  });
}
