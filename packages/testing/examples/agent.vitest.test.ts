// Testing an agent's tool calls against faults with vitest: a real toolwire server, a real tool host
// behind a fault proxy, and a misbehaving host. Run: npx vitest run agent.vitest.test.ts
import { afterAll, expect, it } from 'vitest';
import { closeAll, expectCapture, startHost, startRogueHost, startServer, waitForCallInFlight } from '@toolwire/testing';

// A tool that runs until it is stopped, then answers with what it did so far.
const tools = {
  echo: (input: unknown) => JSON.stringify(input),
  work: (_input: unknown, ctx: { signal: AbortSignal }) =>
    new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve('stopped early'), { once: true })),
};

afterAll(closeAll); // a safety net: whatever a failed test left open

it('a host that goes silent mid-call is reported unavailable (69) within the heartbeat bound', async () => {
  await using server = await startServer({ heartbeatMs: 200 });
  await using host = await startHost(server, tools, { name: 'laptop' });
  const call = server.call('laptop__work');
  await waitForCallInFlight(server);
  host.net.blackhole(); // the lid closes: no FIN, bytes vanish
  expectCapture(await call)
    .toExit(69)
    .withReason(/heartbeat/);
});

it('a slow network past the deadline gives 124, and the healed network answers', async () => {
  await using server = await startServer();
  await using host = await startHost(server, tools, { name: 'laptop' });
  host.net.latency(800, 100);
  expectCapture(await server.call('laptop__echo', { n: 1 }, { deadlineMs: 300 })).toExit(124);
  host.net.heal();
  expectCapture(await server.call('laptop__echo', { n: 2 }))
    .toExit(0)
    .withStdout('{"n":2}');
});

it('a host that answers garbage is a protocol violation (76)', async () => {
  await using server = await startServer();
  await using rogue = await startRogueHost(server, 'garbage');
  expectCapture(await server.call('rogue__rogue')).toExit(76);
  expect((await rogue.closed).code).toBe(1002);
});
