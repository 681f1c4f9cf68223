/**
 * Live output end to end (issue 13) with the real parts: a `ToolwireServer` on 127.0.0.1:0 and a real
 * `ToolHost` process (@toolwire/testing's, with the tools of `fixtures/live-tools.json`) whose subprocess tools stream through the spawn
 * helper: chunks reach `executor.execute`'s `onOutput` while the tool runs, a host killed
 * mid-stream leaves what it streamed in the record, and a capture over the cap is byte-identical
 * whether or not it streamed.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestServer, closeAll, startHost, startServer } from '@toolwire/testing';
import { cleanup, repoRoot, tempDir, text, waitFor } from './helpers.js';

afterEach(async () => {
  await cleanup();
  await closeAll();
});

const HOST = join(repoRoot, 'test', 'fixtures', 'live-tools.json');

/** The live host process `alpha` (no reconnect: a killed host stays gone). */
const startLiveHost = (started: TestServer, liveOutput = true) =>
  startHost(started, HOST, { name: 'alpha', process: true, hostOptions: { reconnect: false, liveOutput } });

async function run(started: TestServer, name: string, extra: object = {}) {
  const result = await started.call(name, {}, extra);
  if (result.outcome !== 'completed') throw new Error(`${name}: ${result.outcome}`);
  return result;
}

describe('live output: a real server and a real tool host process', () => {
  it("chunks reach executor.execute's onOutput in order while the tool runs, and add up to the capture", async () => {
    const started = await startServer();
    await startLiveHost(started);
    const chunks: { stream: string; text: string; seq: number; at: number }[] = [];
    const result = await run(started, 'alpha__ticker', {
      onOutput: (c: { stream: string; bytes: Uint8Array; seq: number }) => void chunks.push({ stream: c.stream, text: text(c.bytes), seq: c.seq, at: Date.now() }),
    });
    const endedAt = Date.now();
    expect(result.capture.exitCode).toBe(0);
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
    const out = chunks
      .filter((c) => c.stream === 'stdout')
      .map((c) => c.text)
      .join('');
    expect(out).toBe(text(result.capture.stdout));
    expect(out).toBe('line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n');
    expect(text(result.capture.stderr)).toBe('done\n');
    // The tool runs ~1.2 s; its first line arrived while it ran, long before the end.
    expect(chunks[0]!.text).toBe('line 1\n');
    expect(endedAt - chunks[0]!.at).toBeGreaterThan(600);
  });

  it('a host killed mid-stream: 69, and the lines it streamed are in the record (stdout.log) and the capture', async () => {
    const recordDir = await tempDir('toolwire-live-record-');
    const started = await startServer({ recordDir });
    const host = await startLiveHost(started);
    const seen: string[] = [];
    const running = run(started, 'alpha__forever', {
      id: 'killed',
      onOutput: (c: { stream: string; bytes: Uint8Array }) => void (c.stream === 'stdout' && seen.push(text(c.bytes))),
    });
    await waitFor(() => seen.join('').includes('line 3\n'), 'a few lines streamed', 10_000);
    await host.kill('SIGKILL'); // the host process (its reaper ends the spawn helper and the tool)
    const result = await running;
    expect(result.capture.exitCode).toBe(69);
    const log = await readFile(join(recordDir, 'agent', 'killed', 'stdout.log'), 'utf8');
    expect(log).toMatch(/^line 0\nline 1\nline 2\nline 3\n(line \d+\n)*$/);
    expect(text(result.capture.stdout)).toBe(log);
    expect(seen.join('')).toBe(log); // the consumer saw what the record holds
  });

  it('the capture of a 20 MB output is byte-identical streamed and with live output off on the host', async () => {
    const captures = [];
    for (const live of ['1', '0']) {
      const started = await startServer();
      await startLiveHost(started, live === '1');
      let chunks = 0;
      const result = await run(started, 'alpha__big', { onOutput: () => void chunks++ });
      expect(result.capture.exitCode).toBe(0);
      if (live === '1') expect(chunks).toBeGreaterThan(100);
      else expect(chunks).toBe(0);
      captures.push(result.capture);
    }
    const [streamed, whole] = captures;
    expect(streamed!.stdout.length).toBeGreaterThan(6_000_000); // head + marker + tail of the cap
    expect(text(streamed!.stdout)).toContain('[... stdout truncated: ');
    expect(Buffer.from(streamed!.stdout).equals(Buffer.from(whole!.stdout))).toBe(true);
    expect(Buffer.from(streamed!.stderr).equals(Buffer.from(whole!.stderr))).toBe(true);
  }, 60_000);
});
