/** Shared parts of the MCP source tests: a ToolHost in this process serving MCP servers, against a real server. */
import { join } from 'node:path';
import { type McpServerConfig, ToolHost } from '@toolwire/client';
import type { ExecuteResult } from '@toolwire/server';
import { recordingLogger } from '../adversarial/harness.js';
import { HOST_TOKEN, type Started, defer, repoRoot, startServer, waitFor } from '../helpers.js';

export const FAKE = join(repoRoot, 'packages', 'client', 'test', 'fixtures', 'mcp-fake.mjs');

/** A stdio config running the fake MCP server in `mode`. */
export function fake(mode = 'normal', extra: McpServerConfig = {}, env: Record<string, string> = {}): McpServerConfig {
  return { command: process.execPath, args: [FAKE, mode], env, ...extra };
}

export type Completed = Extract<ExecuteResult, { outcome: 'completed' }>;

/** A real server and a ToolHost (this process) with `servers`; waits until `ready` names are listed. */
export async function hostWith(servers: Record<string, McpServerConfig>, ready: string[], setup?: (host: ToolHost) => void) {
  const log = recordingLogger();
  const started = await startServer({ cancelGraceMs: 500 });
  const host = new ToolHost({ server: started.url, token: HOST_TOKEN, logger: log.logger, cancelGraceMs: 500 });
  setup?.(host);
  for (const [name, config] of Object.entries(servers)) host.mcpServer(name, config);
  defer(() => host.close());
  await host.start();
  await listed(started, ready);
  return { started, host, log };
}

/** Wait until every name in `names` is listed by the server. */
export function listed(started: Started, names: string[], timeoutMs = 15_000) {
  return waitFor(() => names.every((n) => started.server.router.tools().some((t) => t.name === n)), `tools ${names.join(', ')}`, timeoutMs);
}

export function run(started: Started, name: string, input: unknown = {}, extra: object = {}): Promise<Completed> {
  return started.server.executor.execute({ name, input, agent: 'agent', ...extra }) as Promise<Completed>;
}
