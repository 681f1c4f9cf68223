/**
 * Issue 3 §5 — process trees. A stop or a deadline kills the tool's whole process group, including a
 * backgrounded grandchild that keeps stdout open and a tree that ignores SIGTERM; the capture arrives
 * within the cancel grace + 500 ms and no process of the tool outlives that bound. A child that
 * leaves the group with `setsid` is the documented limit (README "Failure semantics"). The host is
 * a @toolwire/testing child-process host running the manifest of test/adversarial/fixtures.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { ExecuteResult } from '@toolwire/server';
import { type TestServer, closeAll, startHost, startServer } from '@toolwire/testing';
import { cleanup, defer, repoRoot, tempDir, text } from '../helpers.js';
import { killAll, pidsIn, processGroupOf, running, waitFor } from './harness.js';

afterEach(async () => {
  await closeAll();
  await cleanup();
});

type Completed = Extract<ExecuteResult, { outcome: 'completed' }>;

/** Host: SIGTERM → SIGKILL after 500 ms, drain 200 ms. Server: waits up to 1000 ms for partial output after a stop. */
const HOST_GRACE = 500;
const SERVER_GRACE = 1_000;

const MANIFEST = join(repoRoot, 'test', 'adversarial', 'fixtures', 'tools.json');

async function rig(): Promise<{ started: TestServer; pidfile: string }> {
  const started = await startServer({ cancelGraceMs: SERVER_GRACE });
  const piddir = await tempDir();
  await startHost(started, MANIFEST, { name: 'alpha', process: true, env: { PIDDIR: piddir }, hostOptions: { cancelGraceMs: HOST_GRACE, drainMs: 200 } });
  return { started, pidfile: join(piddir, 'pids') };
}

function execute(started: TestServer, name: string, extra: Record<string, unknown> = {}) {
  const out = { at: 0, result: undefined as unknown as Promise<Completed> };
  out.result = started.call(name, {}, extra).then((r) => {
    out.at = performance.now();
    return r as Completed;
  });
  return out;
}

/** Wait until the tool recorded its two pids (grandchild, shell) and both run. */
async function treePids(pidfile: string): Promise<number[]> {
  const pids = await pidsIn(pidfile, 2);
  defer(() => killAll(pids));
  expect(pids.every(running)).toBe(true);
  return pids;
}

/** Every pid is gone by `deadline` (performance.now()); polled, never past the bound plus one poll. */
async function expectGoneBy(pids: number[], deadline: number): Promise<void> {
  await waitFor(() => pids.every((pid) => !running(pid)) || performance.now() > deadline, 'the tool processes to end', 10_000, 5);
  expect(pids.filter(running)).toEqual([]);
}

describe('stop kills the whole process group', () => {
  for (const tool of ['tree', 'stubborn'] as const) {
    const what = tool === 'tree' ? 'a tree whose grandchild holds stdout' : 'a tree that ignores SIGTERM';
    it(`${what}: the capture (130, partial output kept) arrives within the cancel grace + 500 ms, and no process of it outlives that`, async () => {
      const { started, pidfile } = await rig();
      const call = execute(started, `alpha__${tool}`);
      const pids = await treePids(pidfile);
      const stoppedAt = performance.now();
      started.executor.stop('agent');
      const { capture } = await call.result;
      const bound = stoppedAt + SERVER_GRACE + 500;
      expect(capture.exitCode).toBe(130);
      expect(text(capture.stdout)).toBe('started\n');
      expect(call.at).toBeLessThanOrEqual(bound);
      // The host answered with the partial output, so it killed the group before answering.
      expect(text(capture.stderr)).toBe('toolwire: cancelled by stop\n');
      await expectGoneBy(pids, bound);
    });
  }
});

describe('a deadline kills the whole process group', () => {
  for (const tool of ['tree', 'stubborn'] as const) {
    it(`${tool}: the call settles 124 at the deadline, and no process of it outlives the deadline + grace + 500 ms`, async () => {
      const { started, pidfile } = await rig();
      const DEADLINE = 1_500;
      const call = execute(started, `alpha__${tool}`, { deadlineMs: DEADLINE });
      const sentAt = performance.now();
      const pids = await treePids(pidfile);
      const { capture } = await call.result;
      expect(capture.exitCode).toBe(124);
      expect(text(capture.stderr)).toBe(`toolwire: deadline of ${DEADLINE} ms exceeded\n`);
      const deadlineAt = sentAt + DEADLINE;
      expect(call.at).toBeLessThanOrEqual(deadlineAt + 500);
      await expectGoneBy(pids, deadlineAt + HOST_GRACE + 500);
      expect(started.router.hosts()[0]!.inFlight).toBe(0);
    });
  }
});

describe('a tool that exits while its grandchild holds stdout', () => {
  it('answers within the drain bound and the grandchild is killed', async () => {
    const { started, pidfile } = await rig();
    const begun = performance.now();
    const { capture } = await execute(started, 'alpha__leaver').result;
    const pids = await pidsIn(pidfile, 2);
    defer(() => killAll(pids));
    expect(capture.exitCode).toBe(0);
    expect(text(capture.stdout)).toBe('started\n');
    expect(performance.now() - begun).toBeLessThan(200 + 1_500);
    await expectGoneBy(pids, performance.now() + 500);
  });
});

describe('documented limit: a child that escapes its process group with setsid', () => {
  it('is not reached by the group kill (README "Failure semantics"); the rest of the tree is', async () => {
    const { started, pidfile } = await rig();
    const call = execute(started, 'alpha__escapee');
    const [escaped, shell] = await treePids(pidfile);
    // `$!` is known before the child has called setsid(); wait until it really left the group.
    await waitFor(() => processGroupOf(escaped!) === escaped, 'the child to be in its own session');
    started.executor.stop('agent');
    expect((await call.result).capture.exitCode).toBe(130);
    await expectGoneBy([shell!], performance.now() + SERVER_GRACE + 500);
    expect(running(escaped!)).toBe(true); // the limit; killed by this test's teardown
  });
});
