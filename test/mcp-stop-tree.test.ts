/**
 * Issue 15 §2, "the host kills the work each time (process tree), as for a stop": a call made through
 * the MCP door by the 1.x SDK client to a command tool whose backgrounded grandchild holds stdout
 * (test/adversarial/fixtures), on a real server and a child-process host. Cancelling the call
 * (AbortSignal → `notifications/cancelled`) and closing its response stream (the client gone) each
 * end the tool's whole process group within the cancel grace + 500 ms, as a stop does.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { closeAll, startHost, startServer } from '@toolwire/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, defer, repoRoot, tempDir } from './helpers.js';
import { killAll, pidsIn, running, waitFor } from './adversarial/harness.js';

afterEach(async () => {
  await closeAll();
  await cleanup();
});

const HOST_GRACE = 500;
const MANIFEST = join(repoRoot, 'test', 'adversarial', 'fixtures', 'tools.json');

describe('an MCP call stopped by its caller kills the tool’s process tree', () => {
  it.each(['notifications/cancelled', 'the response stream closing'] as const)(
    '%s: the shell and its grandchild are gone within the grace + 500 ms',
    async (how) => {
      const started = await startServer({ cancelGraceMs: 1_000 });
      const piddir = await tempDir();
      await startHost(started, MANIFEST, { name: 'alpha', process: true, env: { PIDDIR: piddir }, hostOptions: { cancelGraceMs: HOST_GRACE, drainMs: 200 } });
      const client = new Client({ name: 'stop-tree', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(started.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${started.callerToken}` } } });
      await client.connect(transport);
      defer(() => client.close());
      const ac = new AbortController();
      const call = client.callTool({ name: 'alpha__tree', arguments: {} }, undefined, { signal: ac.signal, timeout: 60_000 });
      const pids = await pidsIn(join(piddir, 'pids'), 2);
      defer(() => killAll(pids));
      expect(pids.every(running)).toBe(true);
      const stoppedAt = performance.now();
      if (how === 'notifications/cancelled') ac.abort('enough');
      else await transport.close(); // the POST's response stream closes with no cancellation sent
      await expect(call).rejects.toThrow();
      await waitFor(() => pids.every((pid) => !running(pid)) || performance.now() > stoppedAt + HOST_GRACE + 500, 'the tool processes to end', 10_000, 5);
      expect(pids.filter(running)).toEqual([]);
    },
  );
});
