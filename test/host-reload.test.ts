/**
 * `toolwire host` reloads its manifest on SIGHUP (issue 10 item 7): a real server on port 0, a real
 * host process. Tools whose program is missing are not advertised; a manifest that no longer loads
 * keeps the old set; a call in flight finishes with its full output.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Started, HOST_TOKEN, cleanup, cliPath, spawnTs, startServer, tempDir, text, waitFor } from './helpers.js';

afterEach(cleanup);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read the outcome's capture directly
const run = (started: Started, name: string, input: unknown = {}): Promise<any> => started.server.executor.execute({ name, input, agent: 'agent' });
const names = (started: Started): string[] => started.server.router.tools().map((t) => t.name);

describe('toolwire host: SIGHUP reloads the manifest', () => {
  it('adds a tool without dropping a call in flight; a broken manifest keeps the old set; a missing program is not advertised', async () => {
    const dir = await tempDir();
    const gate = join(dir, 'gate');
    execFileSync('mkfifo', [gate]);
    const marker = join(dir, 'started');
    // `long` says it started, waits for a line on the gate, then prints 20000 lines: its full output is checked.
    const long = { command: ['sh', '-c', `cat >/dev/null; echo > '${marker}'; read line < '${gate}'; echo "got $line"; seq 1 20000`] };
    const manifest = join(dir, 'tools.json');
    await writeFile(
      manifest,
      JSON.stringify({
        schema: 1,
        tools: {
          long, // no input_schema: means {"type": "object"}
          ghost: { input_schema: { type: 'object' }, command: ['toolwire-no-such-program', '--flag'] },
          gone: { command: ['/nonexistent/toolwire/bin'] },
        },
      }),
    );
    const started = await startServer();
    const host = spawnTs([cliPath, 'host', '--server', started.url, '--token', HOST_TOKEN, '--manifest', manifest, '--log-level', 'info']);
    let log = '';
    host.stderr!.on('data', (d: string) => (log += d));
    const lines = (): Record<string, unknown>[] =>
      log
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    await waitFor(() => names(started).includes('alpha__long') || host.exitCode !== null, 'the host to advertise', 15_000);
    expect(names(started)).toEqual(['alpha__long']);
    expect(started.server.router.tools()[0]!.inputSchema).toEqual({ type: 'object' });
    const warnings = lines().filter((l) => l.level === 40);
    expect(warnings).toEqual([
      expect.objectContaining({
        tool: 'ghost',
        command: ['toolwire-no-such-program', '--flag'],
        msg: 'toolwire: tool ghost is not advertised: "toolwire-no-such-program" is not on PATH',
      }),
      expect.objectContaining({
        tool: 'gone',
        command: ['/nonexistent/toolwire/bin'],
        msg: 'toolwire: tool gone is not advertised: "/nonexistent/toolwire/bin" does not exist',
      }),
    ]);

    // A call on `long` is running when the manifest changes.
    const call = run(started, 'alpha__long');
    await waitFor(
      () =>
        readFile(marker).then(
          () => true,
          () => false,
        ),
      'the long call to start',
      15_000,
    );
    const ghost = { command: ['toolwire-no-such-program', '--flag'] };
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { long, b: { description: 'added', command: ['echo', 'b'] }, ghost } }));
    process.kill(host.pid!, 'SIGHUP');
    await waitFor(() => names(started).includes('alpha__b'), 'the reloaded tool to be advertised', 15_000);
    expect(names(started)).toEqual(['alpha__long', 'alpha__b']);
    const reloaded = await waitFor(() => lines().find((l) => l.msg === 'toolwire: manifest reloaded'), 'the reload log line');
    expect(reloaded).toMatchObject({ added: ['b'], removed: [], changed: [] });
    expect(lines().filter((l) => l.level === 40 && l.tool === 'ghost')).toHaveLength(2); // checked again at the reload
    expect(started.server.router.hosts().some((h) => h.inFlight === 1)).toBe(true);

    await writeFile(gate, 'go\n');
    const result = await call;
    expect(result.capture.exitCode).toBe(0);
    expect(text(result.capture.stdout)).toBe(`got go\n${Array.from({ length: 20000 }, (_, i) => i + 1).join('\n')}\n`);
    expect(text((await run(started, 'alpha__b')).capture.stdout)).toBe('b\n');

    // A manifest that no longer loads: one error line with the reason, the old set stays.
    await writeFile(manifest, '{ "schema": 1, "tools": ');
    process.kill(host.pid!, 'SIGHUP');
    const failed = await waitFor(() => lines().find((l) => l.level === 50), 'the reload failure log line');
    expect(failed.msg).toMatch(/^toolwire: manifest reload failed, the previous tools stay: manifest .*tools\.json: not valid JSON/);
    expect(log.split('\n').filter((l) => l.includes('reload failed'))).toHaveLength(1);
    expect(names(started)).toEqual(['alpha__long', 'alpha__b']);
    expect(text((await run(started, 'alpha__b')).capture.stdout)).toBe('b\n');
    expect(host.exitCode).toBeNull();

    const exited = once(host, 'exit');
    host.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  });
});
