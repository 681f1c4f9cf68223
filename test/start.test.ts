/**
 * Issue 10 §6 — `pnpm start` (bin/start.ts) survives its host being replaced: a second host that
 * takes the identity `local` ends the built-in host, `pnpm start` says so (naming the address) and
 * the server keeps serving; Ctrl-C (SIGINT) still stops everything.
 */
import { once, type EventEmitter } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, cliPath, finish, repoRoot, spawnTs, tempDir, waitForText } from './helpers.js';

afterEach(cleanup);

/** `pnpm start` runs two processes under tsx: a longer bound for its lines. */
const waitForTextLong = (stream: EventEmitter, pattern: RegExp): Promise<RegExpMatchArray> => waitForText(stream, pattern, 20_000);

describe('pnpm start', () => {
  it('keeps serving after a second host takes the local identity, says who took it, and stops on SIGINT', async () => {
    const home = await tempDir();
    const start = spawnTs([join(repoRoot, 'bin', 'start.ts'), '--listen', '127.0.0.1:0'], { TOOLWIRE_HOME: home });
    const localUp = waitForTextLong(start.stderr!, /"host":"local"[^\n]*toolwire: connected/);
    await waitForTextLong(start.stdout!, /toolwire is up/);
    await localUp;

    // "Another machine" started with the default credentials: the same token, identity local.
    const replaced = waitForTextLong(
      start.stderr!,
      /the local tool host "local" was replaced by another host using the identity "local" from 127\.0\.0\.1[^\n]*the server keeps running/,
    );
    const second = spawnTs([cliPath, 'host', '--manifest', join(repoRoot, 'examples', 'tools.json')], { TOOLWIRE_HOME: home });
    await replaced;
    expect(start.exitCode).toBeNull();

    // The server still serves, now the second host's tools.
    const call = await finish(spawnTs([cliPath, 'call', 'local__read_file', JSON.stringify({ path: 'README.md' })], { TOOLWIRE_HOME: home }));
    expect(call.code).toBe(0);
    expect(call.stdout).toContain('# toolwire');

    const exited = once(start, 'exit');
    start.kill('SIGINT');
    const [code] = (await exited) as [number];
    expect(code).toBe(0);
    second.kill('SIGTERM');
    await once(second, 'exit');
  });
});
