/**
 * The offload worker threads never keep a process alive: a program that closed its server ends at
 * once, not after the threads' idle time (5 s).
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { cleanup, finish, repoRoot, spawnTs, waitForText } from '../helpers.js';

afterEach(cleanup);

it('a program that used the offload workers exits as soon as its server is closed', { timeout: 60_000 }, async () => {
  const child = spawnTs([join(repoRoot, 'test', 'abuse', 'fixtures', 'close-exit.ts')]);
  const done = finish(child, 30_000);
  await waitForText(child.stdout!, /closed true\n/, 30_000);
  const closedAt = Date.now();
  const { code } = await done;
  expect(code).toBe(0);
  expect(Date.now() - closedAt).toBeLessThan(3_000);
});
