/**
 * Issue 3 §8 — tool-set changes while calls are in flight, and name collisions across hosts. A call
 * is bound to the host it was sent to: when that host re-advertises without the tool, the call still
 * completes (or settles cleanly by stop or deadline) and is never rerouted to another host that
 * advertises the name. Two hosts advertising one name follow DESIGN §2 in both naming modes.
 * The hosts are @toolwire/testing rogue hosts driven by hand.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecuteResult, ToolwireServerOptions } from '@toolwire/server';
import { type TestServer, closeAll, startRogueHost, startServer, waitUntil } from '@toolwire/testing';
import { text } from '../helpers.js';
import { recordingLogger } from './harness.js';

afterEach(closeAll);

type Completed = Extract<ExecuteResult, { outcome: 'completed' }>;

const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });

function execute(server: TestServer, name: string, extra: Record<string, unknown> = {}): Promise<Completed> {
  return server.call(name, {}, extra) as Promise<Completed>;
}

async function twoHosts(naming: ToolwireServerOptions['naming']) {
  const log = recordingLogger();
  const started = await startServer({ naming, logger: log.logger, cancelGraceMs: 200 });
  const alpha = await startRogueHost(started, { name: 'alpha', tools: [tool('shared'), tool('keep')] });
  const beta = await startRogueHost(started, { name: 'beta', tools: [tool('shared')] });
  return { started, alpha, beta, log };
}

describe('a host re-advertises without a tool while a call to it is in flight', () => {
  for (const naming of ['qualified', 'bare'] as const) {
    const name = naming === 'qualified' ? 'alpha__shared' : 'shared';
    it(`(${naming}) the call completes on the host it was sent to and is never rerouted; new calls follow the new tool set`, async () => {
      const { started, alpha, beta, log } = await twoHosts(naming);
      const frame = alpha.nextCall();
      const inFlight = execute(started, name);
      const { id } = await frame;

      const advertised = await alpha.advertise([tool('keep')]);
      expect(advertised.accepted).toEqual([{ name: 'keep', as: naming === 'qualified' ? 'alpha__keep' : 'keep' }]);
      expect(started.router.tools().some((t) => t.name === name && naming === 'qualified')).toBe(false);
      if (naming === 'bare') {
        // The freed bare name goes to beta only when beta advertises again (DESIGN §2).
        expect(started.router.tools().some((t) => t.name === 'shared')).toBe(false);
        const again = await beta.advertise([tool('shared')]);
        expect(again.accepted).toEqual([{ name: 'shared', as: 'shared' }]);
      }
      expect(started.router.hosts().find((h) => h.name === 'alpha')!.inFlight).toBe(1);

      alpha.result(id, { stdout: 'from alpha' });
      const done = await inFlight;
      expect(done.capture.exitCode).toBe(0);
      expect(text(done.capture.stdout)).toBe('from alpha');
      expect(beta.calls.length).toBe(0); // never rerouted

      // A new call to the name goes where the tool set now says: beta in bare mode, nowhere (127) when qualified.
      if (naming === 'bare') {
        const next = beta.nextCall();
        const routed = execute(started, 'shared');
        beta.result((await next).id, { stdout: 'from beta' });
        expect(text((await routed).capture.stdout)).toBe('from beta');
      } else {
        expect((await execute(started, 'alpha__shared')).capture.exitCode).toBe(127);
      }
      expect(log.errors()).toEqual([]);
    });
  }

  it('a call to a withdrawn tool that the host never answers still settles cleanly: 124 at its deadline, 130 on stop', async () => {
    const { started, alpha, beta } = await twoHosts('qualified');
    const deadlined = execute(started, 'alpha__shared', { deadlineMs: 300 });
    const stopped = execute(started, 'alpha__shared', { agent: 'other' });
    await waitUntil(() => alpha.calls.length === 2, 'both call frames');
    await alpha.advertise([]);
    started.executor.stop('other');
    expect((await stopped).capture.exitCode).toBe(130);
    expect((await deadlined).capture.exitCode).toBe(124);
    expect(beta.calls.length).toBe(0);
    expect(started.router.hosts().every((h) => h.inFlight === 0)).toBe(true);
  });
});

describe('two hosts advertising the same name', () => {
  it('qualified naming (default): both are exposed under their own host prefix', async () => {
    const { started } = await twoHosts('qualified');
    expect(
      started.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['alpha__keep', 'alpha__shared', 'beta__shared']);
  });

  it('bare naming: the first host keeps the name, the later one gets it in advertised.rejected; it is not handed over when the first leaves', async () => {
    const log = recordingLogger();
    const started = await startServer({ naming: 'bare', logger: log.logger });
    const alpha = await startRogueHost(started, { name: 'alpha', tools: [tool('shared')] });
    const beta = await startRogueHost(started, { name: 'beta', tools: [] });
    const refused = await beta.advertise([tool('shared'), tool('mine')]);
    expect(refused.accepted).toEqual([{ name: 'mine', as: 'mine' }]);
    expect(refused.rejected).toEqual([{ name: 'shared', reason: 'name "shared" is already advertised by another host (naming bare: the first host keeps a name)' }]);
    const frame = alpha.nextCall();
    const call = execute(started, 'shared');
    alpha.result((await frame).id, { stdout: 'alpha keeps it' });
    expect(text((await call).capture.stdout)).toBe('alpha keeps it');

    alpha.ws.close();
    await waitUntil(() => !started.router.hosts().some((h) => h.name === 'alpha'), 'alpha to leave');
    expect(started.router.tools().map((t) => t.name)).toEqual(['mine']);
    // Not handed over: the name still belongs to alpha, which is away (69, retry later), not to beta.
    const away = await execute(started, 'shared');
    expect(away.capture.exitCode).toBe(69);
    expect(Buffer.from(away.capture.stderr).toString()).toMatch(/host alpha is not connected/);
    const taken = await beta.advertise([tool('shared'), tool('mine')]);
    expect(taken.rejected).toEqual([]);
    expect(
      started.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['mine', 'shared']);
  });

  it('qualified naming: host names that collide through "_" (a_ + __ + b = a + __ + _b) follow the same first-keeps rule', async () => {
    const started = await startServer();
    const first = await startRogueHost(started, { name: 'a_', tools: [tool('b')] });
    const second = await startRogueHost(started, { name: 'a', tools: [] });
    const answer = await second.advertise([tool('_b'), tool('c')]);
    expect(answer.accepted).toEqual([{ name: 'c', as: 'a__c' }]);
    expect((answer.rejected as { name: string }[]).map((r) => r.name)).toEqual(['_b']);
    const frame = first.nextCall();
    const call = execute(started, 'a___b');
    first.result((await frame).id, { stdout: 'first keeps it' });
    expect(text((await call).capture.stdout)).toBe('first keeps it');
    expect(second.calls.length).toBe(0);
  });
});
