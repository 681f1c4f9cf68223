/**
 * Live output through the whole server (a `ToolwireServer` on 127.0.0.1:0, a raw protocol-2 tool
 * host): `executor.execute({onOutput})` and the disk record's `stdout.log` / `stderr.log`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutputChunk } from '../src/seam.js';
import { type ListenInfo, ToolwireServer } from '../src/toolwire-server.js';
import type { ToolwireServerOptions } from '../src/options.js';
import { SLOW, text, waitFor } from './endpoint.harness.js';
import { StreamingHost } from './streaming-host.js';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const HOST_TOKEN = 'host-token-executor-output-1';

let recordDir: string;
let server: ToolwireServer | undefined;
let host: StreamingHost | undefined;
let child: ChildProcess | undefined;

beforeEach(async () => {
  recordDir = await mkdtemp(join(tmpdir(), 'toolwire-output-'));
});
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  child = undefined;
  host?.ws.terminate();
  await server?.close();
  server = undefined;
  host = undefined;
  await rm(recordDir, { recursive: true, force: true });
});

async function start(options: ToolwireServerOptions = {}): Promise<{ info: ListenInfo; host: StreamingHost }> {
  server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], recordDir, ...options });
  const info = await server.listen(0, '127.0.0.1');
  host = await StreamingHost.connect(info.url, { token: HOST_TOKEN, tools: [SLOW] });
  return { info, host };
}

const readText = (path: string): Promise<string> => readFile(path, 'utf8').catch(() => '');

describe('executor and disk record with live output', () => {
  it('passes chunks to the caller and appends them to stdout.log/stderr.log as they arrive; output.json at the end', async () => {
    const { host } = await start();
    const seen: OutputChunk[] = [];
    const running = server!.executor.execute({ id: 'call-1', name: 'alpha__slow', input: {}, agent: 'agent', onOutput: (c) => void seen.push(c) });
    const wire = await host.call();
    const dir = join(recordDir, 'agent', 'call-1');
    await wire.write('stdout', 'step 1\n');
    await waitFor(async () => (await readText(join(dir, 'stdout.log'))) === 'step 1\n', 'step 1 on disk while the call runs', 5_000);
    await wire.write('stderr', 'careful\n');
    await wire.write('stdout', 'step 2\n');
    wire.end(0, { stdout: 'done\n' });
    const result = await running;
    expect(result.outcome).toBe('completed');
    if (result.outcome !== 'completed') return;
    expect(text(result.capture.stdout)).toBe('step 1\nstep 2\ndone\n');
    expect(seen.map((c) => text(c.bytes))).toEqual(['step 1\n', 'careful\n', 'step 2\n', 'done\n']);
    expect(await readFile(join(dir, 'stdout.log'), 'utf8')).toBe('step 1\nstep 2\ndone\n');
    expect(await readFile(join(dir, 'stderr.log'), 'utf8')).toBe('careful\n');
    expect((await stat(join(dir, 'stdout.log'))).mode & 0o777).toBe(0o600);
    const output = JSON.parse(await readFile(join(dir, 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output).toMatchObject({ stdout: 'step 1\nstep 2\ndone\n', stderr: 'careful\n', exitCode: 0 });
  });

  it('a host killed mid-stream: the call settles 69 and what streamed is in stdout.log and output.json', async () => {
    const { host } = await start();
    const running = server!.executor.execute({ id: 'call-2', name: 'alpha__slow', input: {}, agent: 'agent' });
    const wire = await host.call();
    const dir = join(recordDir, 'agent', 'call-2');
    await wire.write('stdout', 'compiling…\n');
    await waitFor(async () => (await readText(join(dir, 'stdout.log'))) === 'compiling…\n', 'streamed output on disk', 5_000);
    host.ws.terminate();
    const result = await running;
    if (result.outcome !== 'completed') throw new Error(result.outcome);
    expect(result.capture.exitCode).toBe(69);
    expect(text(result.capture.stdout)).toBe('compiling…\n');
    expect(await readFile(join(dir, 'stdout.log'), 'utf8')).toBe('compiling…\n');
    expect(await readFile(join(dir, 'stderr.log'), 'utf8')).toMatch(/^toolwire: host alpha disconnected/);
    const output = JSON.parse(await readFile(join(dir, 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output).toMatchObject({ stdout: 'compiling…\n', exitCode: 69, failure: 'unavailable' });
  });

  it('a host process killed (SIGKILL) mid-stream: 69, and the lines it streamed are in stdout.log', async () => {
    server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], recordDir });
    const info = await server.listen(0, '127.0.0.1');
    child = spawn(process.execPath, [...SOURCE_NODE_ARGS, join(import.meta.dirname, 'fixtures', 'streaming-host-process.ts'), info.url, HOST_TOKEN], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => out.includes('ready'), 'the host process advertised', 15_000);
    const running = server.executor.execute({ id: 'call-k', name: 'alpha__slow', input: {}, agent: 'agent' });
    const log = join(recordDir, 'agent', 'call-k', 'stdout.log');
    await waitFor(async () => (await readText(log)).includes('line 3\n'), 'a few lines on disk', 10_000);
    child.kill('SIGKILL');
    const result = await running;
    if (result.outcome !== 'completed') throw new Error(result.outcome);
    expect(result.capture.exitCode).toBe(69);
    const streamed = await readFile(log, 'utf8');
    expect(streamed).toMatch(/^line 0\nline 1\nline 2\nline 3\n(line \d+\n)*$/);
    expect(text(result.capture.stdout)).toBe(streamed);
  });

  it('stops a log at maxRecordLogBytes with one marker line; the capture is unaffected', async () => {
    const { host } = await start({ maxRecordLogBytes: 10 });
    const running = server!.executor.execute({ id: 'call-3', name: 'alpha__slow', input: {}, agent: 'agent' });
    const wire = await host.call();
    await wire.write('stdout', '0123456');
    await wire.write('stdout', '789abcdef\n');
    wire.end(0);
    const result = await running;
    if (result.outcome !== 'completed') throw new Error(result.outcome);
    expect(text(result.capture.stdout)).toBe('0123456789abcdef\n');
    const log = await readFile(join(recordDir, 'agent', 'call-3', 'stdout.log'), 'utf8');
    expect(log).toBe('0123456789\n[... toolwire: stdout.log stops here at 10 bytes (maxRecordLogBytes) ...]\n');
  });

  it('writes no log files for a call that did not stream', async () => {
    const { host } = await start();
    const running = server!.executor.execute({ id: 'call-4', name: 'alpha__slow', input: {}, agent: 'agent' });
    (await host.call()).end(0, { stdout: 'at once\n' });
    const result = await running;
    if (result.outcome !== 'completed') throw new Error(result.outcome);
    expect(text(result.capture.stdout)).toBe('at once\n');
    await expect(stat(join(recordDir, 'agent', 'call-4', 'stdout.log'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses an onOutput that is not a function at once', () => {
    server = new ToolwireServer({});
    expect(() => server!.executor.execute({ name: 'x', input: {}, agent: 'agent', onOutput: 'no' as never })).toThrow(TypeError);
  });
});
