import { describe, expect, it, vi } from 'vitest';
import { failureCapture, utf8 } from '@toolwire/protocol';
import type { ToolwireServerOptions } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import type { HostLink } from '../src/router/host-link.js';
import { Router } from '../src/router/router.js';
import type { RoutedCall, RoutedCapture } from '../src/seam.js';
import { recordingLogger, routedCall, text } from './endpoint.harness.js';

class FakeLink implements HostLink {
  readonly connectedAt = new Date(1_700_000_000_000);
  inFlight = 0;
  isOpen = true;
  replaced = 0;
  calls: { tool: string; call: RoutedCall }[] = [];
  answer: (tool: string, call: RoutedCall) => Promise<RoutedCapture> = async () => ({ stdout: utf8('ok'), stderr: new Uint8Array(0), exitCode: 0 });
  constructor(readonly host: string) {}
  call(tool: string, call: RoutedCall): Promise<RoutedCapture> {
    this.calls.push({ tool, call });
    return this.answer(tool, call);
  }
  replace(): void {
    this.replaced += 1;
    this.isOpen = false;
  }
}

const tool = (name: string, description?: string) => ({ name, inputSchema: { type: 'object' }, ...(description ? { description } : {}) });

function setup(options: ToolwireServerOptions = {}) {
  const router = new Router(resolveServerConfig(options).router);
  const changes = vi.fn();
  router.on('toolsChanged', changes);
  return { router, changes };
}

describe('Router.tools and toolsChanged', () => {
  it('lists qualified names by default and bare names with naming "bare"', async () => {
    const q = setup().router;
    const a = new FakeLink('alpha');
    q.bind(a);
    await q.advertise(a, [tool('read', 'reads a file')]);
    expect(q.tools()).toEqual([{ name: 'alpha__read', description: 'reads a file', inputSchema: { type: 'object' } }]);

    const b = setup({ naming: 'bare' }).router;
    const link = new FakeLink('alpha');
    b.bind(link);
    expect((await b.advertise(link, [tool('read')])).accepted).toEqual([{ name: 'read', as: 'read' }]);
    expect(b.tools().map((t) => t.name)).toEqual(['read']);
  });

  it('emits toolsChanged exactly once per change and caches the array between changes', async () => {
    const { router, changes } = setup();
    const a = new FakeLink('alpha');
    router.bind(a);
    expect(changes).toHaveBeenCalledTimes(0); // binding a host without tools changes nothing
    await router.advertise(a, [tool('read'), tool('write')]);
    expect(changes).toHaveBeenCalledTimes(1);
    const cached = router.tools();
    await router.advertise(a, [tool('read'), tool('write')]); // same set again
    expect(changes).toHaveBeenCalledTimes(1);
    expect(router.tools()).toBe(cached);
    await router.advertise(a, [tool('read')]);
    expect(changes).toHaveBeenCalledTimes(2);
    expect(router.tools()).not.toBe(cached);
    router.unbind(a);
    expect(changes).toHaveBeenCalledTimes(3);
    expect(router.tools()).toEqual([]);
    router.unbind(a);
    expect(changes).toHaveBeenCalledTimes(3);
  });

  it('a throwing toolsChanged listener is logged, not propagated', async () => {
    const { logger, entries } = recordingLogger();
    const router = new Router(resolveServerConfig({ logger }).router);
    router.on('toolsChanged', () => {
      throw new Error('listener bug');
    });
    const a = new FakeLink('alpha');
    router.bind(a);
    await expect(router.advertise(a, [tool('read')])).resolves.toMatchObject({ type: 'advertised' });
    expect(entries.some((e) => e.level === 'error')).toBe(true);
  });
});

describe('Router.bind / unbind (replacement)', () => {
  it("replaces an older link of the same identity; the old link's late unbind keeps the new one", async () => {
    const { router, changes } = setup();
    const old = new FakeLink('alpha');
    router.bind(old);
    await router.advertise(old, [tool('read')]);
    const fresh = new FakeLink('alpha');
    router.bind(fresh);
    expect(old.replaced).toBe(1);
    expect(router.tools()).toEqual([]); // the old session's tools left with it
    expect(changes).toHaveBeenCalledTimes(2);
    await router.advertise(fresh, [tool('read')]);
    router.unbind(old); // the old socket's close arrives late
    expect(router.tools().map((t) => t.name)).toEqual(['alpha__read']);
    expect(router.hosts()).toEqual([{ name: 'alpha', tools: ['alpha__read'], inFlight: 0, connectedAt: fresh.connectedAt }]);
    // A stale link cannot advertise.
    const stale = await router.advertise(old, [tool('x')]);
    expect(stale.accepted).toEqual([]);
    expect(stale.rejected).toEqual([{ name: 'x', reason: 'session is no longer current' }]);
  });
});

describe('Router.route', () => {
  async function bound() {
    const { router } = setup();
    const link = new FakeLink('alpha');
    router.bind(link);
    await router.advertise(link, [tool('read')]);
    return { router, link };
  }

  it('resolves undefined for a name no connected host advertises', async () => {
    const { router, link } = await bound();
    expect(await router.route(routedCall('alpha__nope').call)).toBeUndefined();
    expect(await router.route(routedCall('read').call)).toBeUndefined();
    expect(link.calls).toEqual([]);
  });

  it('forwards the call with the bare tool name and returns the host capture', async () => {
    const { router, link } = await bound();
    const { call } = routedCall('alpha__read', { input: { path: 'x' } });
    const capture = await router.route(call);
    expect(text(capture!.stdout)).toBe('ok');
    expect(link.calls).toEqual([{ tool: 'read', call }]);
  });

  it('settles 130 without sending when the signal is already aborted', async () => {
    const { router, link } = await bound();
    const { call, controller } = routedCall('alpha__read');
    controller.abort();
    const capture = await router.route(call);
    expect(capture).toMatchObject({ exitCode: 130, failure: 'cancelled' });
    expect(text(capture!.stderr)).toBe('toolwire: cancelled by stop\n');
    expect(link.calls).toEqual([]);
  });

  it('settles 69 when the host session is not open', async () => {
    const { router, link } = await bound();
    link.isOpen = false;
    const capture = await router.route(routedCall('alpha__read').call);
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture!.stderr)).toMatch(/toolwire: host alpha is not connected\n$/);
  });

  it('a departed host’s tools answer 69 "not connected", or with the reason a cluster gave, until the host is back', async () => {
    const { router, link } = await bound();
    router.unbind(link);
    let capture = await router.route(routedCall('alpha__read').call);
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture!.stderr)).toBe('toolwire: host alpha is not connected; its tools return when it reconnects\n');

    const remote = new FakeLink('alpha');
    router.bind(remote);
    await router.advertise(remote, [tool('read')]);
    router.unbind(remote, 'node a was lost (no heartbeat for 1000 ms)');
    capture = await router.route(routedCall('alpha__read').call);
    expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(text(capture!.stderr)).toBe(
      'toolwire: host alpha is unreachable: node a was lost (no heartbeat for 1000 ms); its tools return when it is reachable again\n',
    );

    // Back, and gone again by a plain disconnect: the cluster's reason is not kept.
    const back = new FakeLink('alpha');
    router.bind(back);
    await router.advertise(back, [tool('read')]);
    expect(text((await router.route(routedCall('alpha__read').call))!.stdout)).toBe('ok');
    router.unbind(back);
    expect(text((await router.route(routedCall('alpha__read').call))!.stderr)).toMatch(/host alpha is not connected;/);
  });

  it('never rejects: a throwing link becomes a capture with the reason on stderr', async () => {
    const { router, link } = await bound();
    link.answer = () => {
      throw new Error('boom');
    };
    const capture = await router.route(routedCall('alpha__read').call);
    expect(capture).toMatchObject({ exitCode: 70 });
    expect(text(capture!.stderr)).toMatch(/toolwire: .*boom\n$/);
  });

  it('passes synthetic captures through unchanged', async () => {
    const { router, link } = await bound();
    link.answer = async () => failureCapture('overloaded', 'busy');
    expect(await router.route(routedCall('alpha__read').call)).toMatchObject({ exitCode: 75 });
  });

  it('reports in-flight counts per host', async () => {
    const { router, link } = await bound();
    link.inFlight = 3;
    expect(router.hosts()[0]).toMatchObject({ name: 'alpha', inFlight: 3, tools: ['alpha__read'] });
  });
});
