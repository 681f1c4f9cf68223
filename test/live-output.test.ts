/**
 * `toolwire call` with live output (issue 13): a real server on 127.0.0.1:0, a protocol-2 tool host
 * that streams (`packages/server/test/streaming-host.ts`: the tool host library does not stream
 * yet) and the real `toolwire` CLI in its own process. Output reaches the CLI's stdout and stderr as
 * the tool writes it, nothing is printed twice, the exit code is the tool's, Ctrl-C has shown what
 * arrived, and `--no-stream` prints once at the end as before.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, openSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { closeAll, startHost, startServer as startKitServer } from '@toolwire/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type StreamingCall, StreamingHost } from '../packages/server/test/streaming-host.js';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, finish, spawnTs, startServer, tempDir, waitFor } from './helpers.js';
import { SOURCE_NODE_ARGS } from './source-node.js';

afterEach(async () => {
  await cleanup();
  await closeAll();
});

const LINES = 10;
const EVERY_MS = 200;
const lines = Array.from({ length: LINES }, (_, i) => `line ${i + 1}\n`).join('');

/** A server and a host whose tool `ticker` prints a line every 200 ms (and a warning on stderr), then exits 3. */
async function setup(v1 = false): Promise<{ mcpUrl: string; ended: () => number | undefined; calls: StreamingCall[] }> {
  const { url, mcpUrl } = await startServer();
  let endedAt: number | undefined;
  const calls: StreamingCall[] = [];
  const host = await StreamingHost.connect(url, {
    token: HOST_TOKEN,
    tools: [{ name: 'ticker', inputSchema: { type: 'object' } }],
    v1,
    onCall: async (call) => {
      if (v1) {
        // An older host: no output frames, everything in the result.
        endedAt = Date.now();
        return call.end(3, { stdout: lines, stderr: 'warning: slow disk\n' });
      }
      calls.push(call);
      for (let n = 1; n <= LINES; n++) {
        if (n === 2) await call.write('stderr', 'warning: slow disk\n');
        await call.write('stdout', `line ${n}\n`);
        const stop = await Promise.race([call.cancelled, new Promise((resolve) => setTimeout(resolve, EVERY_MS))]);
        if (stop === 'stop') return call.end(130, { stderr: 'toolwire: cancelled by stop\n' });
      }
      endedAt = Date.now();
      call.end(3);
    },
  });
  defer(() => host.ws.terminate());
  return { mcpUrl, ended: () => endedAt, calls };
}

const args = (mcpUrl: string, ...more: string[]) => [cliPath, 'call', 'alpha__ticker', '--server', mcpUrl, '--token', CALLER_TOKEN, ...more];

describe('toolwire call: live output', () => {
  it('prints each line as the tool writes it: the first reaches stdout well before the tool ends; nothing twice; exit code kept', async () => {
    const { mcpUrl, ended } = await setup();
    const child = spawnTs(args(mcpUrl));
    let firstAt: number | undefined;
    child.stdout!.once('data', () => (firstAt = Date.now()));
    const { code, stdout, stderr } = await finish(child, 30_000);
    expect(code).toBe(3);
    expect(stdout).toBe(lines);
    expect(stderr).toBe('warning: slow disk\n');
    expect(firstAt).toBeDefined();
    // The tool runs ~2 s; its first line is on the CLI's stdout more than a second before it ends.
    expect(ended()! - firstAt!).toBeGreaterThan(1_000);
  });

  it('--no-stream prints the capture once, after the tool ended', async () => {
    const { mcpUrl, ended } = await setup();
    const child = spawnTs(args(mcpUrl, '--no-stream'));
    let firstAt: number | undefined;
    child.stdout!.once('data', () => (firstAt = Date.now()));
    const { code, stdout, stderr } = await finish(child, 30_000);
    expect(code).toBe(3);
    expect(stdout).toBe(lines);
    expect(stderr).toBe('warning: slow disk\n');
    expect(firstAt).toBeGreaterThanOrEqual(ended()!);
  });

  it('on Ctrl-C has shown what arrived, then exits 130', async () => {
    const { mcpUrl, calls } = await setup();
    const child = spawnTs(args(mcpUrl));
    let out = '';
    child.stdout!.on('data', (d: string) => (out += d));
    await waitFor(() => out.includes('line 2\n'), 'two lines on the CLI stdout', 15_000);
    const shown = out;
    child.kill('SIGINT');
    const { code, stderr } = await finish(child, 15_000);
    expect(code).toBe(130);
    expect(out.startsWith(shown)).toBe(true);
    expect(out).toMatch(/^(line \d+\n)+$/);
    expect(stderr).toMatch(/toolwire: cancelled by stop\n$/);
    expect(await calls[0]!.cancelled).toBe('stop');
  });

  it('on Ctrl-C while its stdout is not read (a stuck pipe): exits 130 at once, without waiting for the reader', async () => {
    // A real tool host process running `yes`, and the CLI's stdout a real pipe (a FIFO, as in
    // `toolwire call … | reader`) that this test never reads.
    const dir = await tempDir();
    const manifest = join(dir, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { yes: { input_schema: { type: 'object' }, command: ['yes'] } } }));
    const server = await startKitServer();
    await startHost(server, manifest, { name: 'alpha', process: true, hostOptions: { reconnect: false } });
    const fifo = join(dir, 'stdout');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    defer(() => closeSync(reader));
    const writer = openSync(fifo, constants.O_WRONLY);
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, cliPath, 'call', 'alpha__yes', '--server', server.mcpUrl, '--token', server.callerToken], {
      stdio: ['ignore', writer, 'pipe'],
    });
    closeSync(writer);
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    defer(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // Far more than the pipe holds has been written: the CLI has output it cannot write.
    await waitFor(() => (server.server.status().calls[0]?.bytes ?? 0) > 2 * 1024 * 1024, 'yes to write 2 MiB', 30_000);
    const signalled = Date.now();
    child.kill('SIGINT');
    const [code, signal] = await Promise.race([
      exited,
      new Promise<[string, number]>((resolve) => setTimeout(() => resolve(['still running after ms', Date.now() - signalled]), 10_000).unref()),
    ]);
    expect([code, signal]).toEqual([130, null]);
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(stderr).toMatch(/toolwire: cancelled by stop\n$/);
    await waitFor(() => server.server.status().calls.length === 0, 'the call to end on the server', 10_000);
  });

  it('a deadline mid-stream: the streamed lines, then the reason line once; exit 124', async () => {
    const { mcpUrl } = await setup();
    const { code, stdout, stderr } = await finish(spawnTs(args(mcpUrl, '--timeout', '700')), 30_000);
    expect(code).toBe(124);
    expect(stdout).toMatch(/^line 1\nline 2\n(line \d+\n)*$/);
    expect(stderr).toBe('warning: slow disk\ntoolwire: deadline of 700 ms exceeded\n');
  });

  it('a host that does not stream (protocol 1): the capture is printed at the end, as before', async () => {
    const { mcpUrl } = await setup(true);
    const { code, stdout, stderr } = await finish(spawnTs(args(mcpUrl)), 30_000);
    expect(code).toBe(3);
    expect(stdout).toBe(lines);
    expect(stderr).toBe('warning: slow disk\n');
  });
});
