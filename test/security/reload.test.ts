/**
 * Issue 5 §1 — token rotation without a restart: `toolwire serve --config FILE` reloads the file's
 * hosts and callers on SIGHUP. A removed host token closes that host's session (close 1008) and its
 * calls settle 69; a file that does not load leaves the old credentials in force.
 */
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  CALLER_TOKEN,
  HOST2_TOKEN,
  HOST_TOKEN,
  cleanup,
  cliPath,
  finish,
  nextFrame,
  rawAdvertise,
  rawHost,
  spawnTs,
  tempDir,
  waitFor,
  waitForText,
} from '../helpers.js';

afterEach(cleanup);

async function serveWith(config: string, dir: string): Promise<{ serve: ChildProcess; url: string }> {
  const serve = spawnTs([cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--log-level', 'info'], { TOOLWIRE_HOME: dir });
  const [, url] = await waitForText(serve.stdout!, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)/);
  return { serve, url: url! };
}

const SLOW = { name: 'slow', inputSchema: { type: 'object' } };

describe('SIGHUP reloads the credentials of toolwire serve', () => {
  it('a removed host token closes its session 1008 and its call settles 69; a bad file changes nothing; a rotated token takes over', async () => {
    const dir = await tempDir();
    const config = join(dir, 'config.json');
    const write = (hosts: unknown[]): Promise<void> => writeFile(config, JSON.stringify({ hosts, callers: [{ name: 'agent', token: CALLER_TOKEN }] }));
    await write([
      { name: 'alpha', token: HOST_TOKEN },
      { name: 'beta', token: HOST2_TOKEN },
    ]);
    const { serve, url } = await serveWith(config, dir);

    const alpha = await rawHost(url, HOST_TOKEN);
    await rawAdvertise(alpha, [SLOW]);
    const beta = await rawHost(url, HOST2_TOKEN);
    await rawAdvertise(beta, [SLOW]);

    // A call in flight to alpha (the raw host never answers it).
    const dispatched = nextFrame(alpha, 'call');
    const call = finish(spawnTs([cliPath, 'call', 'alpha__slow', '{}', '--server', url, '--token', CALLER_TOKEN], { TOOLWIRE_HOME: dir }));
    await dispatched;

    const alphaClosed = once(alpha, 'close');
    const reloaded = waitForText(serve.stderr!, /config reloaded/);
    await write([{ name: 'beta', token: HOST2_TOKEN }]);
    serve.kill('SIGHUP');
    await reloaded;
    const [code] = (await alphaClosed) as [number];
    expect(code).toBe(1008);
    const result = await call;
    expect(result.code).toBe(69);
    expect(result.stderr).toContain('toolwire: host alpha token was revoked (close 1008 POLICY_VIOLATION)');
    expect(beta.readyState).toBe(WebSocket.OPEN);

    // A file that does not load: logged, the previous credentials stay, the server keeps running.
    const failed = waitForText(serve.stderr!, /config reload failed/);
    await writeFile(config, '{ not json');
    serve.kill('SIGHUP');
    await failed;
    expect(beta.readyState).toBe(WebSocket.OPEN);
    expect(serve.exitCode).toBeNull();

    // Rotation: beta's new token replaces the old one; the old session closes, the new token connects.
    const rotated = 'host-token-rotated-bbbbbbbbbbbbbbbb';
    const betaClosed = once(beta, 'close');
    await write([{ name: 'beta', token: rotated }]);
    serve.kill('SIGHUP');
    expect(((await betaClosed) as [number])[0]).toBe(1008);
    const again = await waitFor(async () => {
      try {
        return await rawHost(url, rotated);
      } catch {
        return undefined;
      }
    }, 'the rotated token to be accepted');
    expect((await rawAdvertise(again, [SLOW])).accepted).toEqual([{ name: 'slow', as: 'beta__slow' }]);

    serve.kill('SIGTERM');
    expect((await finish(serve)).code).toBe(0);
  });
});
