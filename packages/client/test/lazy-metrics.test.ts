/**
 * prom-client is loaded only by a host made with `metrics: true` (`host/host-metrics.ts`): a tool
 * host without metrics, the default, does not carry it (bench/README.md, session 16).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const fixture = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'metrics-loaded.mjs');

/** Whether a fresh node process that made a ToolHost (with or without metrics) loaded prom-client. */
async function promClientLoaded(mode: 'plain' | 'metrics'): Promise<boolean> {
  const { stdout } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, fixture, mode], { timeout: 30_000 });
  return JSON.parse(stdout.trim()) as boolean;
}

describe('prom-client is loaded on demand', () => {
  it('a ToolHost without metrics does not load prom-client', async () => {
    expect(await promClientLoaded('plain')).toBe(false);
  });

  it('a ToolHost with metrics: true loads it (the check above can see it)', async () => {
    expect(await promClientLoaded('metrics')).toBe(true);
  });
});
