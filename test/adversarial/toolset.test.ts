/**
 * Issue 3 §8 — tool-set changes while calls are in flight, and name collisions across hosts. A call
 * is bound to the host it was sent to: when that host re-advertises without the tool, the call still
 * completes (or settles cleanly by stop or deadline) and is never rerouted to another host that
 * advertises the name. Two hosts advertising one name follow DESIGN §2 in both naming modes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecuteResult, ToolwireServerOptions } from '@toolwire/server';
import { HOST2_TOKEN, cleanup, nextFrame, startServer, text, type Started } from '../helpers.js';
import { drivenHost, recordingLogger, waitFor, type DrivenHost } from './harness.js';

afterEach(cleanup);

type Completed = Extract<ExecuteResult, { outcome: 'completed' }>;

const tool = (name: string) => ({ name, inputSchema: { type: 'object' } });

function execute(started: Started, name: string, extra: Record<string, unknown> = {}): Promise<Completed> {
  return started.server.executor.execute({ name, input: {}, agent: 'agent', ...extra }) as Promise<Completed>;
}

/** Re-advertise `tools` on a driven host and resolve with the `advertised` answer. */
async function readvertise(host: DrivenHost, tools: unknown[]): Promise<Record<string, unknown>> {
  const answer = nextFrame(host.ws, 'advertised');
  host.ws.send(JSON.stringify({ type: 'advertise', tools }));
  return answer;
}

async function twoHosts(naming: ToolwireServerOptions['naming']) {
  const log = recordingLogger();
  const started = await startServer({ naming, logger: log.logger, cancelGraceMs: 200 });
  const alpha = await drivenHost(started, [tool('shared'), tool('keep')]);
  const beta = await drivenHost(started, [tool('shared')], HOST2_TOKEN);
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

      const advertised = await readvertise(alpha, [tool('keep')]);
      expect(advertised.accepted).toEqual([{ name: 'keep', as: naming === 'qualified' ? 'alpha__keep' : 'keep' }]);
      expect(started.server.router.tools().some((t) => t.name === name && naming === 'qualified')).toBe(false);
      if (naming === 'bare') {
        // The freed bare name goes to beta only when beta advertises again (DESIGN §2).
        expect(started.server.router.tools().some((t) => t.name === 'shared')).toBe(false);
        const again = await readvertise(beta, [tool('shared')]);
        expect(again.accepted).toEqual([{ name: 'shared', as: 'shared' }]);
      }
      expect(started.server.router.hosts().find((h) => h.name === 'alpha')!.inFlight).toBe(1);

      alpha.answer(id as string, 'from alpha');
      const done = await inFlight;
      expect(done.capture.exitCode).toBe(0);
      expect(text(done.capture.stdout)).toBe('from alpha');
      expect(beta.calls.size).toBe(0); // never rerouted

      // A new call to the name goes where the tool set now says: beta in bare mode, nowhere (127) when qualified.
      if (naming === 'bare') {
        const next = beta.nextCall();
        const routed = execute(started, 'shared');
        beta.answer((await next).id as string, 'from beta');
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
    await waitFor(() => alpha.calls.size === 2, 'both call frames');
    await readvertise(alpha, []);
    started.server.executor.stop('other');
    expect((await stopped).capture.exitCode).toBe(130);
    expect((await deadlined).capture.exitCode).toBe(124);
    expect(beta.calls.size).toBe(0);
    expect(started.server.router.hosts().every((h) => h.inFlight === 0)).toBe(true);
  });
});

describe('two hosts advertising the same name', () => {
  it('qualified naming (default): both are exposed under their own host prefix', async () => {
    const { started } = await twoHosts('qualified');
    expect(
      started.server.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['alpha__keep', 'alpha__shared', 'beta__shared']);
  });

  it('bare naming: the first host keeps the name, the later one gets it in advertised.rejected; it is not handed over when the first leaves', async () => {
    const log = recordingLogger();
    const started = await startServer({ naming: 'bare', logger: log.logger });
    const alpha = await drivenHost(started, [tool('shared')]);
    const beta = await drivenHost(started, [], HOST2_TOKEN);
    const refused = await readvertise(beta, [tool('shared'), tool('mine')]);
    expect(refused.accepted).toEqual([{ name: 'mine', as: 'mine' }]);
    expect(refused.rejected).toEqual([{ name: 'shared', reason: 'name "shared" is already advertised by another host (naming bare: the first host keeps a name)' }]);
    const frame = alpha.nextCall();
    const call = execute(started, 'shared');
    alpha.answer((await frame).id as string, 'alpha keeps it');
    expect(text((await call).capture.stdout)).toBe('alpha keeps it');

    alpha.ws.close();
    await waitFor(() => !started.server.router.hosts().some((h) => h.name === 'alpha'), 'alpha to leave');
    expect(started.server.router.tools().map((t) => t.name)).toEqual(['mine']);
    // Not handed over: the name still belongs to alpha, which is away (69, retry later), not to beta.
    const away = await execute(started, 'shared');
    expect(away.capture.exitCode).toBe(69);
    expect(Buffer.from(away.capture.stderr).toString()).toMatch(/host alpha is not connected/);
    const taken = await readvertise(beta, [tool('shared'), tool('mine')]);
    expect(taken.rejected).toEqual([]);
    expect(
      started.server.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['mine', 'shared']);
  });

  it('qualified naming: host names that collide through "_" (a_ + __ + b = a + __ + _b) follow the same first-keeps rule', async () => {
    const started = await startServer({
      hosts: [
        { name: 'a_', token: 'token-a-underscore-0123456789abcdef' },
        { name: 'a', token: 'token-a-plain-0123456789abcdef0123' },
      ],
    });
    const first = await drivenHost(started, [tool('b')], 'token-a-underscore-0123456789abcdef');
    const second = await drivenHost(started, [], 'token-a-plain-0123456789abcdef0123');
    const answer = await readvertise(second, [tool('_b'), tool('c')]);
    expect(answer.accepted).toEqual([{ name: 'c', as: 'a__c' }]);
    expect((answer.rejected as { name: string }[]).map((r) => r.name)).toEqual(['_b']);
    const frame = first.nextCall();
    const call = execute(started, 'a___b');
    first.answer((await frame).id as string, 'first keeps it');
    expect(text((await call).capture.stdout)).toBe('first keeps it');
    expect(second.calls.size).toBe(0);
  });
});
