// Testing an agent's tool calls against faults with node:test (plain JavaScript, no build step):
// a real toolwire server and a real tool host in a child process. Run: node --test agent.node-test.mjs
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { closeAll, expectCapture, startHost, startServer, waitForCallInFlight } from '@toolwire/testing';

// A manifest of subprocess tools; a child-process host can also load a module exporting `tools`.
const manifest = fileURLToPath(new URL('./tools.json', import.meta.url));

after(closeAll);

test('a host process killed mid-call gives 69 at once, and its tools answer 69 until it returns', async () => {
  const server = await startServer();
  const host = await startHost(server, manifest, { name: 'worker', process: true });
  try {
    const call = server.call('worker__sleep', { seconds: 30 });
    await waitForCallInFlight(server);
    await host.kill('SIGKILL');
    expectCapture(await call)
      .toExit(69)
      .withReason(/disconnected/);
    expectCapture(await server.call('worker__sleep', { seconds: 1 }))
      .toExit(69)
      .withReason(/not connected/);
  } finally {
    await host.close();
    await server.close();
  }
});

test('a tool that finishes in time answers with its output', async () => {
  const server = await startServer();
  const host = await startHost(server, manifest, { name: 'worker', process: true });
  try {
    const result = await server.call('worker__sleep', { seconds: 0 });
    expectCapture(result).toExit(0);
    assert.equal(result.outcome, 'completed');
  } finally {
    await host.close();
    await server.close();
  }
});
