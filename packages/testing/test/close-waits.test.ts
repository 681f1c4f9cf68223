/**
 * A wait on a kit handle ends when the handle closes: it is rejected at once, naming the close,
 * rather than left pending until its own bound (10 s, or 600 s for the `late-after-cancel`
 * behaviour's wait for a cancel) with a timer that keeps the test process alive.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, startProxy, startRogueHost, startServer } from '@toolwire/testing';
import { expectNothingLeft, remember } from './leaks.js';

const root = join(import.meta.dirname, '..');

afterAll(async () => {
  await closeAll();
  await expectNothingLeft();
});

/** How long `promise` took to settle after `from`, and whether it was rejected. */
async function settled(promise: Promise<unknown>, from: number): Promise<{ ms: number; error: string | undefined }> {
  try {
    await promise;
    return { ms: performance.now() - from, error: undefined };
  } catch (error) {
    return { ms: performance.now() - from, error: (error as Error).message };
  }
}

describe('waits end with their handle', () => {
  it('proxy.nextConnection() is rejected as soon as the proxy closes, and one asked after close is rejected at once', async () => {
    const server = remember(await startServer());
    const proxy = remember(await startProxy(server.url));
    const waiting = proxy.nextConnection();
    const at = performance.now();
    await proxy.close();
    const result = await settled(waiting, at);
    expect(result.error).toMatch(/closed/);
    expect(result.ms).toBeLessThan(1_000);
    const after = await settled(proxy.nextConnection(), performance.now());
    expect(after.error).toMatch(/closed/);
    expect(after.ms).toBeLessThan(1_000);
    await server.close();
  });

  it("a rogue host's nextCall(), cancelOf() and next() are rejected once its connection closes", async () => {
    const server = remember(await startServer());
    const rogue = await startRogueHost(server, 'silent');
    const waits = [rogue.nextCall(), rogue.cancelOf('c1', 600_000), rogue.next('call')];
    const at = performance.now();
    await rogue.close();
    for (const wait of waits) {
      const result = await settled(wait, at);
      expect(result.error).toMatch(/closed/);
      expect(result.ms).toBeLessThan(1_000);
    }
    await server.close();
  });

  it('late-after-cancel: a program whose server and rogue host closed before the cancel exits at once, not after the 600 s wait', async () => {
    // The behaviour waits up to 600 s for the server's cancel; closed early, that timer held the process.
    const program = [
      "import { startRogueHost, startServer } from '@toolwire/testing';",
      'const server = await startServer();',
      "const rogue = await startRogueHost(server, 'late-after-cancel');",
      "const call = server.call('rogue__rogue', {}, { deadlineMs: 600_000 });",
      'await rogue.nextCall();',
      'await rogue.close();',
      'await call;',
      'await server.close();',
      "console.log('closed');",
    ].join('\n');
    const child = spawn(process.execPath, ['--conditions=@toolwire/source', '--import', 'tsx', '--input-type=module', '-e', program], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    let closedAt = 0;
    child.stdout.on('data', () => (closedAt ||= performance.now()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    clearTimeout(timer);
    expect(out, out).toContain('closed');
    expect(code, out).toBe(0);
    expect(performance.now() - closedAt, 'from "closed" to the process exit').toBeLessThan(3_000);
  }, 60_000);
});
