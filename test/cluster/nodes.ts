/**
 * Real `toolwire serve` processes joined in a cluster over a test's nats-server, and the CLI as the
 * caller: what an operator runs.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CALLER_TOKEN, HOST2_TOKEN, HOST_TOKEN, cliPath, finish, spawnTs, tempDir, waitFor, waitForText } from '../helpers.js';

export interface Node {
  child: ChildProcess;
  /** ws:// URL hosts dial. */
  url: string;
  /** http:// base URL (…/mcp, …/healthz). */
  http: string;
}

/**
 * Spawn `toolwire serve` as cluster node `node` on `nats` (URLs, comma-separated), without waiting
 * for it to listen; `logLevel` (default `warn`) is `--log-level` (the JSON log lines are on the
 * child's stderr).
 */
export async function spawnNode(
  nats: string,
  node: string,
  cluster: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
  logLevel = 'warn',
): Promise<ChildProcess> {
  const dir = await tempDir('toolwire-node-');
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      hosts: [
        { name: 'alpha', token: HOST_TOKEN },
        { name: 'beta', token: HOST2_TOKEN },
      ],
      callers: [{ name: 'agent', token: CALLER_TOKEN }],
      cluster: { nats: nats.split(','), name: 'it', node, heartbeatMs: 250, ...cluster },
      ...extra,
    }),
  );
  return spawnTs([cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--log-level', logLevel], { TOOLWIRE_HOME: dir });
}

/** Start `toolwire serve` as cluster node `node` ({@link spawnNode}) and wait until it listens (20 s at most). */
export async function startNode(
  nats: string,
  node: string,
  cluster: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
  logLevel = 'warn',
): Promise<Node> {
  const child = await spawnNode(nats, node, cluster, extra, logLevel);
  const [, url] = await waitForText(child.stdout!, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)[\s\S]*cluster node\s+\S+/, 20_000);
  return { child, url: url!, http: url!.replace('ws://', 'http://') };
}

/** The node's `/healthz` counts. */
export async function health(node: Node): Promise<{ hosts: number; tools: number }> {
  const res = await fetch(`${node.http}/healthz`);
  return (await res.json()) as { hosts: number; tools: number };
}

/** Wait until `node` lists at least `tools` tools (or at most, with `atMost`). */
export async function toolsOn(node: Node, tools: number, what: string, atMost = false, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    async () => {
      const h = await health(node).catch(() => undefined);
      return h !== undefined && (atMost ? h.tools <= tools : h.tools >= tools);
    },
    what,
    timeoutMs,
    50,
  );
}

/** `toolwire call NAME INPUT` against `node` as caller `agent`; `args` are more flags. */
export function callOn(node: Node, name: string, input: unknown = {}, args: string[] = []): ChildProcess {
  return spawnTs([cliPath, 'call', name, JSON.stringify(input), ...args], { TOOLWIRE_SERVER: node.http, TOOLWIRE_TOKEN: CALLER_TOKEN });
}

/** Run a call to its end. */
export function call(node: Node, name: string, input: unknown = {}, args: string[] = []): ReturnType<typeof finish> {
  return finish(callOn(node, name, input, args), 30_000);
}

/** `toolwire status ARGS…` against `node` as caller `agent`, to its end. */
export function status(node: Node, args: string[] = []): ReturnType<typeof finish> {
  return finish(spawnTs([cliPath, 'status', ...args], { TOOLWIRE_SERVER: node.http, TOOLWIRE_TOKEN: CALLER_TOKEN }), 30_000);
}
