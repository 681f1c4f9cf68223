/**
 * The server process of the abuse tests (`server-proc.ts`, with `--expose-gc`) and a tool-host
 * process beside it (a @toolwire/testing host process), with tracked teardown (`defer` of test/helpers.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { type TestHost, startHost } from '@toolwire/testing';
import { defer, repoRoot, waitFor } from '../helpers.js';
import { SOURCE_NODE_ARGS } from '../source-node.js';

export const ALPHA = 'abuse-alpha-token-0123456789abcdef';
export const BETA = 'abuse-beta-token-0123456789abcdef';

/** A running server process: its URL and a request/reply channel. */
export interface ServerProc {
  url: string;
  child: ChildProcess;
  request<T = Record<string, unknown>>(cmd: string, args?: Record<string, unknown>): Promise<T>;
}

/** Start `server-proc.ts` with `options` (ToolwireServerOptions as JSON) and `env`; resolves once it listens. */
export async function startServerProc(options: object = {}, env: NodeJS.ProcessEnv = {}): Promise<ServerProc> {
  const child = spawn(process.execPath, ['--expose-gc', ...SOURCE_NODE_ARGS, join(repoRoot, 'test', 'abuse', 'server-proc.ts')], {
    cwd: repoRoot,
    env: { ...process.env, ABUSE_ALPHA_TOKEN: ALPHA, ABUSE_BETA_TOKEN: BETA, ABUSE_OPTIONS: JSON.stringify(options), ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  defer(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.disconnect(); // it closes its server and exits
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });
  const pending = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>();
  let seq = 0;
  let ready: ((url: string) => void) | undefined;
  const url = new Promise<string>((resolve) => (ready = resolve));
  child.on('message', (raw: { seq?: number; ready?: boolean; url?: string; error?: string }) => {
    if (raw.ready) return ready?.(raw.url!);
    const waiter = pending.get(raw.seq!);
    pending.delete(raw.seq!);
    if (raw.error !== undefined) waiter?.reject(new Error(raw.error));
    else waiter?.resolve(raw as never);
  });
  child.on('exit', (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`server process exited ${code}: ${stderr}`));
    pending.clear();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const listening = await Promise.race([url, once(child, 'exit').then(() => undefined)]);
  clearTimeout(timer);
  if (listening === undefined) throw new Error(`server process did not start: ${stderr}`);
  return {
    url: listening,
    child,
    request: <T>(cmd: string, args: Record<string, unknown> = {}) =>
      new Promise<T>((resolve, reject) => {
        const n = ++seq;
        pending.set(n, { resolve: resolve, reject });
        child.send({ seq: n, cmd, ...args });
      }),
  };
}

/**
 * Start the integration fixture host (a @toolwire/testing host process with test/fixtures/host-tools.ts)
 * on the server process as `token`, and wait until the server lists `<name>__echo`.
 */
export async function startHostProc(server: ServerProc, token: string, name: string): Promise<TestHost> {
  const host = await startHost({ url: server.url, token }, join(repoRoot, 'test', 'fixtures', 'host-tools.ts'), { name, process: true, timeoutMs: 30_000 });
  defer(() => host.close());
  await waitFor(async () => (await server.request<{ tools: string[] }>('tools')).tools.includes(`${name}__echo`), `host ${name} to advertise`, 30_000, 100);
  return host;
}

/** The `q`-quantile of `values` (0 ≤ q ≤ 1), nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}
