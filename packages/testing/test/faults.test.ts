/**
 * Each fault of the kit produces the documented capture through a real server and a real tool host
 * (issue 18 acceptance): 69 after blackhole() with a short heartbeat, 124 with latency past the
 * deadline, 75 with bandwidth throttling past the buffered limit, 69 at once after reset() and
 * disconnect(), and a healed network answers again.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeAll, expectCapture, startHost, startServer, waitForCallInFlight, waitForTools, waitUntil } from '@toolwire/testing';
import { tools } from './fixtures/tools.js';
import { expectNothingLeft, remember } from './leaks.js';

afterAll(async () => {
  await closeAll();
  await expectNothingLeft();
});

describe('fault proxy between a real host and a real server', () => {
  it('blackhole(): the silent host is cut by the heartbeat and its call settles 69 within the bound', async () => {
    await using server = remember(await startServer({ heartbeatMs: 200 }));
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    const cutAt = performance.now();
    host.net.blackhole();
    expectCapture(await pending)
      .toExit(69)
      .withFailure('unavailable');
    // dead within 2 heartbeat intervals; room for a loaded machine
    expect(performance.now() - cutAt).toBeLessThan(2 * 200 + 1_500);
  });

  it('latency past the deadline: the call settles 124 with the deadline in its reason', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    host.net.latency(1_000);
    expectCapture(await server.call('alpha__echo', { a: 1 }, { deadlineMs: 300 }))
      .toExit(124)
      .withReason(/300 ms/);
    host.net.heal();
    expectCapture(await server.call('alpha__echo', { a: 2 }))
      .toExit(0)
      .withStdout('{"a":2}');
  });

  it('bandwidth throttling past the buffered limit: new calls settle 75 at once', async () => {
    await using server = remember(await startServer({ maxBufferedBytesPerHost: 256 * 1024, deadlineMs: 60_000 }));
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    host.net.bandwidth(4 * 1024);
    const pad = 'x'.repeat(512 * 1024);
    const pending: Promise<unknown>[] = [];
    let overloaded: Awaited<ReturnType<typeof server.call>> | undefined;
    // Calls of 512 KiB fill the kernel's socket buffers behind the throttled proxy, then the server's own.
    for (let i = 0; i < 200 && overloaded === undefined; i++) {
      const call = server.call('alpha__wait', { pad, i });
      pending.push(call);
      const first = await Promise.race([call, new Promise<undefined>((resolve) => setImmediate(resolve, undefined))]);
      if (first !== undefined && first.outcome === 'completed' && first.capture.exitCode === 75) overloaded = first;
    }
    expect(overloaded).toBeDefined();
    expectCapture(overloaded!).toExit(75).withFailure('overloaded');
    host.net.heal();
    server.executor.stop();
    await Promise.all(pending);
  });

  it('reset(): the connection is cut with an RST, the call settles 69 at once, and the host comes back', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    const before = host.advertisedCount;
    host.net.reset();
    expectCapture(await pending).toExit(69);
    await waitUntil(() => host.advertisedCount > before, 'the host to advertise again');
    await waitForTools(server, ['alpha__wait']);
    expectCapture(await server.call('alpha__echo', {})).toExit(0);
  });

  it('disconnect() settles the call in flight 69; reconnect() brings the tools back', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    await host.disconnect();
    expectCapture(await pending).toExit(69);
    expectCapture(await server.call('alpha__echo', {}))
      .toExit(69)
      .withReason(/not connected/);
    await host.reconnect();
    expectCapture(await server.call('alpha__echo', { back: true }))
      .toExit(0)
      .withStdout('true');
  });

  it('closeAfter(bytes): the connection ends once the budget is spent and the call settles 69', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, tools, { name: 'alpha' }));
    host.net.connections[0]!.closeAfter(64);
    expectCapture(await server.call('alpha__wait', { pad: 'x'.repeat(1024) })).toExit(69);
  });
});

describe('child-process hosts', () => {
  const module = join(import.meta.dirname, 'fixtures', 'tools.ts');

  it('kill(): a SIGKILLed host process settles its call 69 at once and leaves tools()', async () => {
    await using server = remember(await startServer());
    await using host = remember(await startHost(server, module, { name: 'alpha', process: true }));
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    await host.kill('SIGKILL');
    expectCapture(await pending).toExit(69);
    expectCapture(await server.call('alpha__wait'))
      .toExit(69)
      .withReason(/not connected/);
  });

  it('pause(): a SIGSTOPped host is cut by the heartbeat (69); resume() and it advertises again', async () => {
    await using server = remember(await startServer({ heartbeatMs: 200 }));
    await using host = remember(await startHost(server, module, { name: 'alpha', process: true }));
    const pending = server.call('alpha__wait');
    await waitForCallInFlight(server, { host: 'alpha' });
    host.pause();
    expectCapture(await pending).toExit(69);
    host.resume();
    await waitForTools(server, ['alpha__echo'], { timeoutMs: 15_000 });
    expectCapture(await server.call('alpha__echo', { n: 1 })).toExit(0);
  });
});
