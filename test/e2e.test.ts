/**
 * End to end: a @toolwire/testing server, a real tool-host process (the kit's, loading
 * test/fixtures/host-tools.ts), the executor; and the toolwire CLI against such a server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestServer, closeAll, startHost, startServer, waitForCallInFlight, waitForTools } from '@toolwire/testing';
import { cleanup, cliPath, finish, repoRoot, spawnTs, text, waitFor } from './helpers.js';

afterEach(async () => {
  await cleanup();
  await closeAll();
});

const FIXTURE_TOOLS = join(repoRoot, 'test', 'fixtures', 'host-tools.ts');

/** A kit server with the fixture host process `alpha`. */
async function withFixtureHost(): Promise<TestServer> {
  const started = await startServer();
  await startHost(started, FIXTURE_TOOLS, { name: 'alpha', process: true, hostOptions: { cancelGraceMs: 1_000 } });
  return started;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read each outcome's own fields (capture, envelope) directly
const run = (started: TestServer, name: string, input: unknown = {}, extra: object = {}): Promise<any> => started.call(name, input, extra);

describe('end to end: server, a real tool-host process, the executor', () => {
  it('lists the host tools under qualified names and runs in-process and subprocess tools', async () => {
    const started = await withFixtureHost();
    const names = started.server.router.tools().map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['alpha__echo', 'alpha__cat', 'alpha__tree', 'alpha__exit3']));

    const echo = await run(started, 'alpha__echo', { hello: 'world' });
    expect(echo.outcome).toBe('completed');
    expect(echo.capture.exitCode).toBe(0);
    expect(text(echo.capture.stdout)).toBe('{"hello":"world"}');
    expect(echo.envelope).toEqual({ text: 'Exit code: 0\n{"hello":"world"}', isError: false });

    const cat = await run(started, 'alpha__cat', { piped: [1, 2, 3] });
    expect(JSON.parse(text(cat.capture.stdout))).toEqual({ piped: [1, 2, 3] });

    const exit3 = await run(started, 'alpha__exit3');
    expect(exit3.capture.exitCode).toBe(3);
    expect(exit3.envelope).toEqual({ text: 'Exit code: 3\nout\n--- stderr ---\nerr\n', isError: true });
  });

  it('carries non-UTF-8 output bytes exactly', async () => {
    const started = await withFixtureHost();
    const result = await run(started, 'alpha__bytes');
    expect(result.capture.exitCode).toBe(3);
    expect([...result.capture.stdout]).toEqual([0xff, 0x00, 0xfe, 0x41]);
  });

  it('answers a missing command with 127 and a throwing handler with 70', async () => {
    const started = await withFixtureHost();
    const missing = await run(started, 'alpha__missing');
    expect(missing.capture.exitCode).toBe(127);
    expect(text(missing.capture.stderr)).toMatch(/toolwire: .*\n$/);
    const crash = await run(started, 'alpha__crash');
    expect(crash.capture.exitCode).toBe(70);
    expect(text(crash.capture.stderr)).toContain('fixture handler exploded');
  });

  it('answers an unknown tool with 127 and input that fails the schema with 65, not routed', async () => {
    const started = await withFixtureHost();
    const unknown = await run(started, 'alpha__nope');
    expect(unknown.capture.exitCode).toBe(127);
    const bad = await run(started, 'alpha__strict', { n: 'one' });
    expect(bad.capture.exitCode).toBe(65);
    expect(text(bad.capture.stderr)).toMatch(/toolwire: .*integer/);
    const good = await run(started, 'alpha__strict', { n: 1 });
    expect(text(good.capture.stdout)).toBe('n=1');
  });

  it('bounds a long stdout in the envelope but keeps it whole in the capture', async () => {
    const started = await withFixtureHost();
    const big = await run(started, 'alpha__big', { bytes: 100_000 });
    expect(big.capture.stdout.length).toBe(100_000);
    expect(big.envelope.text).toContain('[... stdout truncated: 100000 bytes / 1 lines total; showing the first 16384 and last 16384 bytes ...]');
    expect(big.envelope.text.length).toBeLessThan(33_000);
  });
});

describe('the toolwire CLI against a real server', () => {
  it('host runs the example manifest; tools lists it; call prints a file and exits 0', async () => {
    const started = await startServer();
    spawnTs([
      cliPath,
      'host',
      '--server',
      started.url,
      '--token',
      await started.hostToken('alpha'),
      '--manifest',
      join(repoRoot, 'examples', 'tools.json'),
      '--root',
      repoRoot,
    ]);
    await waitForTools(started, ['alpha__read_file'], { timeoutMs: 15_000 });

    const env = { TOOLWIRE_SERVER: started.url, TOOLWIRE_TOKEN: started.callerToken };
    const tools = await finish(spawnTs([cliPath, 'tools'], env));
    expect(tools.code).toBe(0);
    for (const name of ['alpha__list_dir', 'alpha__read_file', 'alpha__search', 'alpha__git_status', 'alpha__sleep']) {
      expect(tools.stdout).toContain(name);
    }

    const call = await finish(spawnTs([cliPath, 'call', 'alpha__read_file', '{"path":"README.md"}'], env));
    expect(call.stderr).toBe('');
    expect(call.code).toBe(0);
    expect(call.stdout).toBe(await readFile(join(repoRoot, 'README.md'), 'utf8'));

    const json = await finish(spawnTs([cliPath, 'tools', '--json', '--server', started.mcpUrl, '--token', started.callerToken]));
    // Exit code and stderr first, so a failure says why (a CI run once saw empty stdout here).
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout).map((t: { name: string }) => t.name)).toContain('alpha__sleep');
  });

  it('call with --timeout 500 on a sleeping tool exits 124 within about a second', async () => {
    const started = await startServer();
    spawnTs([cliPath, 'host', '--server', started.url, '--token', await started.hostToken('alpha'), '--manifest', join(repoRoot, 'examples', 'tools.json')]);
    await waitForTools(started, ['alpha__sleep'], { timeoutMs: 15_000 });
    const env = { TOOLWIRE_SERVER: started.url, TOOLWIRE_TOKEN: started.callerToken };
    const child = spawnTs([cliPath, 'call', 'alpha__sleep', '{"seconds":30}', '--timeout', '500'], env);
    const started_ = Date.now();
    const result = await finish(child);
    expect(result.code).toBe(124);
    expect(result.stderr).toMatch(/toolwire: .*deadline.*500 ms/);
    // Process start-up (tsx) is not part of the deadline; the call itself must end at ~500 ms.
    expect(Date.now() - started_).toBeLessThan(8_000);
  });

  it('Ctrl-C (SIGINT) on call stops the call and exits 130', async () => {
    const started = await withFixtureHost();
    const env = { TOOLWIRE_SERVER: started.url, TOOLWIRE_TOKEN: started.callerToken };
    const child = spawnTs([cliPath, 'call', 'alpha__wait', '{}'], env);
    const done = finish(child);
    await waitForCallInFlight(started, { timeoutMs: 15_000 });
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    await waitFor(() => started.server.router.hosts().every((h) => h.inFlight === 0), 'the call to be stopped on the server');
  });

  it('call prints the whole capture, not the bounded projection the model reads', async () => {
    const started = await withFixtureHost();
    const env = { TOOLWIRE_SERVER: started.url, TOOLWIRE_TOKEN: started.callerToken };
    const result = await finish(spawnTs([cliPath, 'call', 'alpha__big', '{"bytes":100000}'], env));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('x'.repeat(100_000));
  });

  it('a caller token that is wrong exits 77 and a host token cannot call', async () => {
    const started = await startServer();
    const wrong = await finish(spawnTs([cliPath, 'tools', '--server', started.url, '--token', 'nope']));
    expect(wrong.code).toBe(77);
    const hostToken = await finish(spawnTs([cliPath, 'tools', '--server', started.url, '--token', await started.hostToken('alpha')]));
    expect(hostToken.code).toBe(77);
  });
});
