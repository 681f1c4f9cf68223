/**
 * Every limit of `ToolwireServer` is a `toolwire serve` config key and a row of the README limits
 * table (issue 11: new limits come with both).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServerDefaults } from '@toolwire/server';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CONFIG_BYTES, loadConfig } from '../src/commands/serve-config.js';

const readme = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'README.md');
const limits = Object.entries(ServerDefaults).filter((entry): entry is [string, number] => typeof entry[1] === 'number');

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('server limits', () => {
  it('are all accepted by the config file and passed to the server as given', async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolwire-limits-'));
    const path = join(dir, 'config.json');
    await writeFile(path, JSON.stringify({ hosts: [], callers: [], ...Object.fromEntries(limits.map(([key, value]) => [key, Math.max(1, value)])) }));
    const config = await loadConfig(path, {});
    for (const [key, value] of limits) expect(config.options[key as keyof typeof config.options], key).toBe(Math.max(1, value));
  });

  it('a config file over its 1 MiB limit, or one that never ends (/dev/zero), is refused without reading it all', async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolwire-limits-'));
    const big = join(dir, 'big.json');
    await writeFile(big, ' '.repeat(MAX_CONFIG_BYTES + 1));
    await expect(loadConfig(big, {})).rejects.toThrow(`config ${big}: larger than ${MAX_CONFIG_BYTES} bytes`);
    await expect(loadConfig('/dev/zero', {})).rejects.toThrow(`config /dev/zero: larger than ${MAX_CONFIG_BYTES} bytes`);
    const missing = join(dir, 'missing.json');
    await expect(loadConfig(missing, {})).rejects.toThrow(`config ${missing}: cannot read: ENOENT`);
  });

  it('each have a row in the README limits table (call timing and the projection size are settings, not bounds on a peer)', async () => {
    const text = await readFile(readme, 'utf8');
    const table = text.slice(text.indexOf('### Limits'), text.indexOf('### Running with TLS'));
    const elsewhere = new Set(['deadlineMs', 'cancelGraceMs', 'projectionHeadBytes', 'projectionTailBytes']);
    const missing = limits.map(([key]) => key).filter((key) => !elsewhere.has(key) && !table.includes(`\`${key}\``));
    expect(missing).toEqual([]);
  });
});
