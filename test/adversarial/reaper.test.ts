/**
 * Issue 3 §5/§9 — no tool process outlives a tool host that is killed outright. The host's orphan
 * reaper (packages/client/src/subprocess/reaper.ts) kills the registered process groups of a host
 * that dies by SIGKILL, and — the instant between a spawn and its registration — finds the tool by
 * the call id it announced before the spawn (`TOOLWIRE_CALL_ID`, Linux /proc). Tools spawned through
 * the spawn helper (packages/client/src/subprocess/spawn-helper.ts) are killed by the helper, which
 * exits when the host's IPC channel closes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanup, defer, repoRoot, spawnTs, tempDir } from '../helpers.js';
import { killAll, pidsIn, running, waitFor } from './harness.js';

afterEach(cleanup);

const FIXTURE = join(repoRoot, 'test', 'adversarial', 'fixtures', 'reaper-host.ts');

describe('a tool host killed with SIGKILL while its tool runs', () => {
  for (const mode of ['registered', 'window'] as const) {
    const when = mode === 'registered' ? 'after its group was registered' : 'between the spawn and the registration';
    it(`kills the tool's whole tree when the host dies ${when}`, async () => {
      const piddir = await tempDir();
      const host = spawnTs([FIXTURE, mode, `call-${mode}-${Date.now()}`], { PIDDIR: piddir });
      const exited = once(host, 'exit');
      const pids = await pidsIn(join(piddir, 'pids'), 2);
      defer(() => killAll(pids));
      const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      expect(signal).toBe('SIGKILL');
      await waitFor(() => pids.every((pid) => !running(pid)), 'the orphaned tree to be killed by the reaper', 3_000);
    });
  }

  it('finds the group after its registry was rewritten many times (3000 tools before it), and removes the registry', async () => {
    const piddir = await tempDir();
    const host = spawnTs([FIXTURE, 'compacted', `call-compacted-${Date.now()}`], { PIDDIR: piddir });
    const exited = once(host, 'exit');
    const pids = await pidsIn(join(piddir, 'pids'), 2);
    defer(() => killAll(pids));
    await exited;
    const registry = readFileSync(join(piddir, 'registry'), 'utf8');
    expect(registry).toMatch(/toolwire-reaper-/);
    await waitFor(() => pids.every((pid) => !running(pid)), 'the orphaned tree to be killed by the reaper', 3_000);
    await waitFor(() => !existsSync(registry), 'the registry folder to be removed', 3_000);
  });

  it("kills the tool's whole tree through the spawn helper, and the helper exits too", async () => {
    const piddir = await tempDir();
    const host = spawnTs([FIXTURE, 'helper', `call-helper-${Date.now()}`], { PIDDIR: piddir });
    const exited = once(host, 'exit');
    const pids = await pidsIn(join(piddir, 'pids'), 2);
    const helper = Number(readFileSync(join(piddir, 'helper'), 'utf8'));
    expect(helper).toBeGreaterThan(0);
    defer(() => killAll([...pids, helper]));
    const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    expect(signal).toBe('SIGKILL');
    await waitFor(() => [...pids, helper].every((pid) => !running(pid)), 'the tree and the helper to be gone', 3_000);
  });
});
