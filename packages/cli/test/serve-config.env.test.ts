/**
 * Credentials from the environment in a `toolwire serve` config (`tokenEnv`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/commands/serve-config.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('tokens from the environment (config "tokenEnv")', () => {
  async function configFile(body: unknown): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'toolwire-sec-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'config.json');
    await writeFile(path, JSON.stringify(body));
    return path;
  }

  it('reads a token from the named environment variable', async () => {
    const path = await configFile({ hosts: [{ name: 'alpha', tokenEnv: 'TW_ALPHA' }], callers: [{ name: 'agent', tokenEnv: 'TW_AGENT', grant: ['*'] }] });
    const config = await loadConfig(path, { TW_ALPHA: 'from-env-alpha', TW_AGENT: 'from-env-agent' });
    expect(config.hosts).toEqual([{ name: 'alpha', token: 'from-env-alpha' }]);
    expect(config.callers).toEqual([{ name: 'agent', token: 'from-env-agent', grant: ['*'] }]);
  });

  it('refuses an unset variable, both token and tokenEnv, or neither — naming the entry, never a token', async () => {
    const unset = await configFile({ hosts: [{ name: 'alpha', tokenEnv: 'TW_MISSING' }], callers: [] });
    await expect(loadConfig(unset, {})).rejects.toThrow(/\/hosts\/0: environment variable TW_MISSING \(tokenEnv\) is not set/);
    const both = await configFile({ hosts: [{ name: 'alpha', token: 'secret-inline', tokenEnv: 'TW_A' }], callers: [] });
    const error = await loadConfig(both, { TW_A: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/give exactly one of "token" and "tokenEnv"/);
    expect((error as Error).message).not.toContain('secret-inline');
    const neither = await configFile({ hosts: [], callers: [{ name: 'agent' }] });
    await expect(loadConfig(neither, {})).rejects.toThrow(/\/callers\/0: give exactly one/);
  });
});
