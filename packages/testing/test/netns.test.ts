/**
 * The optional kernel-level half-open mode (issue 18 item 4): a host in its own network namespace,
 * joined by a veth pair whose ends drop every packet in the kernel on `host.netns.blackhole()`.
 * Runs where `netnsSupport()` says it can (root, Linux, `ip netns`, `tc`); skipped with the reason
 * elsewhere.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { closeAll, expectCapture, netnsSupport, startHost, startServer, waitForCallInFlight, waitUntil } from '@toolwire/testing';
import { expectNothingLeft, remember } from './leaks.js';

const support = netnsSupport();
const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));
const EXITING_RIG = fileURLToPath(new URL('./fixtures/netns-exit.ts', import.meta.url));

const namespaces = (): string[] => (spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '').split('\n').map((l) => l.split(' ')[0]!);
const linkExists = (name: string): boolean => spawnSync('ip', ['link', 'show', name], { stdio: 'ignore' }).status === 0;
const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('netns mode: detection', () => {
  it('netnsSupport() says whether the mode can run here, and why not', () => {
    if (support.available) expect(support.dropper).toBe('tc');
    else expect(support.reason).toMatch(/^netns mode needs /);
    expect(netnsSupport()).toBe(support); // detected once
  });

  it('{netns: true} without {process: true} is refused at once', async () => {
    await using server = remember(await startServer());
    await expect(startHost(server, TOOLS, { netns: true })).rejects.toThrow(TypeError);
  });
});

describe.skipIf(!support.available)(`netns mode: a host blackholed at the kernel${support.available ? '' : ` — skipped: ${support.reason}`}`, () => {
  afterAll(async () => {
    await closeAll();
    await expectNothingLeft();
  });

  it('a kernel blackhole cuts the silent host by the heartbeat: its call settles 69 within the bound; heal() brings it back; close() leaves nothing', async () => {
    const server = remember(await startServer({ heartbeatMs: 200 }));
    const host = remember(await startHost(server, TOOLS, { name: 'lid', process: true, netns: true }));
    const link = host.netns!;
    expect(namespaces()).toContain(link.name);
    expect(link.hostAddress).toMatch(/^198\.1[89]\.\d+\.\d+$/);
    expect(host.net.url).toContain(link.serverAddress);

    const pending = server.call('lid__wait');
    await waitForCallInFlight(server, { host: 'lid' });
    const before = host.advertisedCount;
    const cutAt = performance.now();
    await link.blackhole();
    expect(link.dropping).toBe(true);
    expectCapture(await pending)
      .toExit(69)
      .withFailure('unavailable');
    // dead within 2 heartbeat intervals; room for a loaded machine
    expect(performance.now() - cutAt).toBeLessThan(2 * 200 + 2_000);
    // The proxy saw no FIN or RST from either side: the connection is still open on the host side.
    expect(host.net.connections.length).toBeGreaterThan(0);

    await link.heal();
    await waitUntil(() => host.advertisedCount > before, 'the host to advertise again after heal()', { timeoutMs: 20_000 });
    expectCapture(await server.call('lid__echo', { back: true }))
      .toExit(0)
      .withStdout('{"back":true}');

    const pid = host.pid!;
    await host.close();
    expect(namespaces()).not.toContain(link.name);
    expect(linkExists(link.serverVeth)).toBe(false);
    expect(running(pid)).toBe(false);
    await server.close();
  });

  it('a test runner that exits without closing leaves no namespace, veth or host process; stale ones of dead runners are swept', async () => {
    // Leftovers of a runner that was SIGKILLed (its exit hook never ran): a namespace and a veth named with its pid.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    const stale = { namespace: `toolwire-${dead}-1`, veth: `tw${dead}s1` };
    expect(spawnSync('ip', ['netns', 'add', stale.namespace]).status).toBe(0);
    expect(spawnSync('ip', ['link', 'add', stale.veth, 'type', 'veth', 'peer', 'name', `tw${dead}h1`]).status).toBe(0);

    const rig = spawn(process.execPath, ['--conditions=@toolwire/source', '--import', 'tsx', EXITING_RIG], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    rig.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    rig.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    onTestFinished(() => void rig.kill('SIGKILL'));
    const [code] = (await once(rig, 'close')) as [number | null]; // at 'exit' stdout may still be unread
    expect(code, err).toBe(0);
    const left = JSON.parse(out) as { namespace: string; veth: string; pid: number };

    expect(namespaces()).not.toContain(stale.namespace);
    expect(linkExists(stale.veth)).toBe(false);
    expect(namespaces()).not.toContain(left.namespace);
    expect(linkExists(left.veth)).toBe(false);
    await waitUntil(() => !running(left.pid), "the rig's host process to be gone");
  }, 90_000); // two node processes from source on a loaded machine
});
