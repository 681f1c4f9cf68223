/**
 * The README's examples are the files that run: each `<!-- example: path -->` block of
 * packages/testing/README.md is that file, unchanged; the vitest example runs with the suite
 * (vitest.config includes packages/*\/examples), and the node:test example runs here with
 * `node --test`, as its README says.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

describe('@toolwire/testing README examples', () => {
  const blocks = [...readme.matchAll(/<!-- example: (\S+) -->\n```\w+\n([\s\S]*?)```\n/g)];

  it('shows each example file exactly as it is', () => {
    expect(blocks.map((b) => b[1])).toEqual(['examples/agent.vitest.test.ts', 'examples/tools.json', 'examples/agent.node-test.mjs']);
    for (const [, path, body] of blocks) expect(body, path).toBe(readFileSync(join(root, path!), 'utf8'));
  });

  it('the node:test example passes under node --test', async () => {
    // From source: the workspace package resolves to src/ (TypeScript) through its export condition.
    const child = spawn(process.execPath, ['--conditions=@toolwire/source', '--import', 'tsx', '--test', join(root, 'examples', 'agent.node-test.mjs')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c))); // at 'exit' output may still be unread
    clearTimeout(timer);
    expect(out, out).toMatch(/# pass 2\n/);
    expect(out).toMatch(/# fail 0\n/);
    expect(code, out).toBe(0);
  }, 120_000);
});
