import { watch } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Capture, failureCapture, utf8 } from '@toolwire/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { envelope } from '../src/executor/envelope.js';
import { Executor } from '../src/executor/executor.js';
import type { CompletedResult, ExecuteResult } from '../src/executor/request.js';
import type { ToolControl } from '../src/executor/gates.js';
import { project } from '../src/executor/projection.js';
import { DiskRecord } from '../src/executor/record.js';
import type { ToolwireServerOptions, Logger } from '../src/options.js';
import { resolveServerConfig } from '../src/config.js';
import type { RoutedCall } from '../src/seam.js';
import { FakeInjection, type Handler } from './fake-injection.js';
import { type LogEntry, recordingLogger } from './endpoint.harness.js';

const echoSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false };

function capture(stdout: string, stderr = '', exitCode = 0): Capture {
  return { stdout: utf8(stdout), stderr: utf8(stderr), exitCode };
}

/** A handler that waits until the call is stopped, then answers 130 (as the router does). */
function holdUntilStopped(entered: (call: RoutedCall) => void): Handler {
  return (call) =>
    new Promise((resolve) => {
      call.signal.addEventListener('abort', () => resolve(failureCapture('cancelled', 'stopped')), { once: true });
      entered(call);
    });
}

function completed(result: ExecuteResult): CompletedResult {
  if (result.outcome !== 'completed') throw new Error(`expected completed, got ${result.outcome}: ${result.reason}`);
  return result;
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

let injection: FakeInjection;
let dirs: string[] = [];

function make(options: ToolwireServerOptions = {}, extra: { toolControl?: ToolControl; fallback?: Handler } = {}): Executor {
  return new Executor({ injection, options: resolveServerConfig(options).executor, ...extra });
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-exec-'));
  dirs.push(dir);
  return dir;
}

beforeEach(() => {
  injection = new FakeInjection();
  injection.list = [{ name: 'echo', inputSchema: echoSchema }];
  injection.handlers.set('echo', async (call) => capture(`${(call.input as { text: string }).text}\n`));
});

afterEach(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  dirs = [];
});

describe('grant gate', () => {
  it('declines a tool that is not in the grant, without a capture or routing', async () => {
    const result = await make().execute({ name: 'echo', input: { text: 'hi' }, agent: 'a', grant: ['other'] });
    expect(result).toMatchObject({ outcome: 'declined', reason: 'tool "echo" is not granted to agent "a"' });
    expect(result).not.toHaveProperty('capture');
    expect(injection.routed).toHaveLength(0);
  });

  it('admits any tool with "*" and a named tool when listed', async () => {
    const ex = make();
    expect((await ex.execute({ name: 'echo', input: { text: 'x' }, agent: 'a', grant: ['*'] })).outcome).toBe('completed');
    expect((await ex.execute({ name: 'echo', input: { text: 'x' }, agent: 'a', grant: ['echo'] })).outcome).toBe('completed');
  });
});

describe('tool control', () => {
  it('refuses with the hook reason and routes nothing', async () => {
    const toolControl = vi.fn<ToolControl>(async () => ({ action: 'refuse', reason: 'not on weekends' }));
    const result = await make({}, { toolControl }).execute({ id: 'c1', name: 'echo', input: { text: 'hi' }, agent: 'a', role: 'caller' });
    expect(result).toEqual({ outcome: 'refused', id: 'c1', reason: 'not on weekends' });
    expect(toolControl).toHaveBeenCalledWith({ id: 'c1', name: 'echo', input: { text: 'hi' }, agent: 'a', role: 'caller' });
    expect(injection.routed).toHaveLength(0);
  });

  it('fails closed when the hook throws', async () => {
    const toolControl: ToolControl = () => {
      throw new Error('policy store down');
    };
    const result = await make({}, { toolControl }).execute({ name: 'echo', input: { text: 'hi' }, agent: 'a' });
    expect(result).toMatchObject({ outcome: 'refused', reason: 'tool control failed: policy store down' });
    expect(injection.routed).toHaveLength(0);
  });

  it('fails closed when the hook returns something that is not a decision', async () => {
    const toolControl = (async () => ({ action: 'maybe' })) as unknown as ToolControl;
    const result = await make({}, { toolControl }).execute({ name: 'echo', input: { text: 'hi' }, agent: 'a' });
    expect(result).toMatchObject({ outcome: 'refused', reason: 'tool control returned an invalid decision' });
  });

  it('passes the call on when the hook says pass', async () => {
    const result = await make({}, { toolControl: async () => ({ action: 'pass' }) }).execute({ name: 'echo', input: { text: 'hi' }, agent: 'a' });
    expect(completed(result).envelope.text).toBe('Exit code: 0\nhi\n');
  });
});

describe('input validation, routing and fallthrough', () => {
  it('answers 65 with the ajv errors on stderr and routes nothing when the input does not match the inputSchema', async () => {
    const result = completed(await make().execute({ name: 'echo', input: { text: 5 }, agent: 'a' }));
    expect(result.capture.exitCode).toBe(65);
    expect(result.capture.failure).toBe('invalid_input');
    expect(text(result.capture.stderr)).toBe('toolwire: input does not match the inputSchema of "echo": /text must be string\n');
    expect(injection.routed).toHaveLength(0);
  });

  it('answers 127 "no such tool" when neither the router nor a fallback knows the name', async () => {
    const result = completed(await make().execute({ name: 'nope', input: {}, agent: 'a' }));
    expect(result.capture.exitCode).toBe(127);
    expect(text(result.capture.stderr)).toBe('toolwire: no such tool "nope"\n');
    expect(result.envelope).toEqual({ text: 'Exit code: 127\n--- stderr ---\ntoolwire: no such tool "nope"\n', isError: true });
  });

  it('falls through to the fallback when the router answers "not mine"', async () => {
    const fallback = vi.fn<Handler>(async () => capture('local\n'));
    const result = completed(await make({}, { fallback }).execute({ name: 'local_tool', input: {}, agent: 'a', workspace: '/w' }));
    expect(result.capture.exitCode).toBe(0);
    expect(fallback.mock.calls[0]![0]).toMatchObject({ name: 'local_tool', agent: 'a', workspace: '/w' });
  });

  it('converts a router that throws into capture 70 with the message on stderr', async () => {
    injection.handlers.set('echo', async () => {
      throw new Error('boom');
    });
    const result = completed(await make().execute({ name: 'echo', input: { text: 'x' }, agent: 'a' }));
    expect(result.capture.exitCode).toBe(70);
    expect(text(result.capture.stderr)).toBe('toolwire: router failed: boom\n');
  });

  it('passes id, input, workspace, agent, deadline and a signal to the router', async () => {
    await make().execute({ id: 'call-1', name: 'echo', input: { text: 'x' }, agent: 'a', workspace: '/ws', deadlineMs: 500 });
    expect(injection.routed[0]).toMatchObject({ id: 'call-1', name: 'echo', input: { text: 'x' }, workspace: '/ws', agent: 'a', deadlineMs: 500 });
    expect(injection.routed[0]!.signal).toBeInstanceOf(AbortSignal);
  });

  it('throws at once on caller misuse', () => {
    const ex = make();
    expect(() => ex.execute({ name: 'echo', input: {}, agent: '../etc' })).toThrow(TypeError);
    expect(() => ex.execute({ id: '..', name: 'echo', input: {}, agent: 'a' })).toThrow(TypeError);
    expect(() => ex.execute({ id: 'a/b', name: 'echo', input: {}, agent: 'a' })).toThrow(TypeError);
    expect(() => ex.execute({ name: '', input: {}, agent: 'a' })).toThrow(TypeError);
    expect(() => ex.execute({ name: 'echo', input: {}, agent: 'a', deadlineMs: 0 })).toThrow(RangeError);
  });
});

describe('projection and envelope', () => {
  it('keeps head and tail of a long stream with one exact marker line', () => {
    const stdout = utf8('line1\nline2\nline3\nline4\nline5\n'); // 30 bytes, 5 lines
    const p = project({ stdout, stderr: new Uint8Array(0), exitCode: 0 }, 8, 6);
    expect(text(p.stdout)).toBe('line1\nli\n[... stdout truncated: 30 bytes / 5 lines total; showing the first 8 and last 6 bytes ...]\nline5\n');
  });

  it('caps stdout and stderr separately at 16384 + 16384 bytes by default', async () => {
    const long = `${'x'.repeat(99)}\n`.repeat(400); // 40000 bytes, 400 lines
    injection.handlers.set('echo', async () => capture(long, long, 1));
    const result = completed(await make().execute({ name: 'echo', input: { text: 'x' }, agent: 'a' }));
    expect(result.capture.stdout.length).toBe(40000);
    const marker = (label: string): string => `\n[... ${label} truncated: 40000 bytes / 400 lines total; showing the first 16384 and last 16384 bytes ...]\n`;
    const expected = (label: string): string => long.slice(0, 16384) + marker(label) + long.slice(40000 - 16384);
    expect(text(result.projection.stdout)).toBe(expected('stdout'));
    expect(text(result.projection.stderr)).toBe(expected('stderr'));
    expect(result.envelope.text).toBe(`Exit code: 1\n${expected('stdout')}--- stderr ---\n${expected('stderr')}`);
  });

  it('builds the projection, envelope and times of a result once, on first read, and writes them in its JSON', async () => {
    injection.handlers.set('echo', async () => capture('0123456789abcdef', '', 0));
    const before = Date.now();
    const result = completed(await make({ projectionHeadBytes: 4, projectionTailBytes: 4 }).execute({ name: 'echo', input: { text: 'x' }, agent: 'a' }));
    const after = Date.now();
    expect(result.projection).toBe(result.projection);
    expect(result.envelope).toBe(result.envelope);
    expect(result.startedAt).toBe(result.startedAt);
    expect(result.projection).toEqual(project(result.capture, 4, 4));
    expect(result.envelope).toEqual(envelope(result.projection));
    expect(result.startedAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(result.endedAt.getTime()).toBeGreaterThanOrEqual(result.startedAt.getTime());
    expect(result.endedAt.getTime()).toBeLessThanOrEqual(after);
    const json = JSON.parse(JSON.stringify(result));
    expect(Object.keys(json).sort()).toEqual(['capture', 'endedAt', 'envelope', 'id', 'outcome', 'projection', 'startedAt']);
    expect(json.envelope).toEqual(result.envelope);
    expect(json.startedAt).toBe(result.startedAt.toISOString());
  });

  it('formats the envelope without a stderr section when stderr is empty', () => {
    expect(envelope({ stdout: utf8('out\n'), stderr: new Uint8Array(0), exitCode: 0 })).toEqual({ text: 'Exit code: 0\nout\n', isError: false });
  });

  it('adds a newline before the stderr section when stdout does not end with one', () => {
    expect(envelope({ stdout: utf8('out'), stderr: utf8('err\n'), exitCode: 2 })).toEqual({
      text: 'Exit code: 2\nout\n--- stderr ---\nerr\n',
      isError: true,
    });
  });

  it('adds no extra newline when stdout is empty', () => {
    expect(envelope({ stdout: new Uint8Array(0), stderr: utf8('err'), exitCode: 0 }).text).toBe('Exit code: 0\n--- stderr ---\nerr');
  });
});

describe('disk record', () => {
  it('writes input.json before routing and output.json after, via temp file + rename', async () => {
    const root = await tempDir();
    // The record's files are written by a worker thread: the temp files and renames are observed
    // through the kernel (inotify), in the call's directory made beforehand.
    const dir = join(root, 'agent-1', 'c-1');
    await mkdir(dir, { recursive: true });
    const events: string[] = [];
    const watcher = watch(dir, (type, file) => events.push(`${type} ${file}`));
    let inputSeenByRouter: unknown;
    injection.handlers.set('echo', async (call) => {
      inputSeenByRouter = JSON.parse(await readFile(join(root, 'agent-1', call.id, 'input.json'), 'utf8'));
      return { stdout: utf8('hi\n'), stderr: Uint8Array.from([0xff, 0xfe]), exitCode: 3 };
    });
    const result = completed(await make({ recordDir: root }).execute({ id: 'c-1', name: 'echo', input: { text: 'hi' }, agent: 'agent-1' }));
    expect(inputSeenByRouter).toEqual({ id: 'c-1', name: 'echo', input: { text: 'hi' } });
    const output = JSON.parse(await readFile(join(dir, 'output.json'), 'utf8'));
    expect(output).toEqual({
      id: 'c-1',
      stdout: 'hi\n',
      stderr: { base64: Buffer.from([0xff, 0xfe]).toString('base64') },
      exitCode: 3,
      startedAt: result.startedAt.toISOString(),
      endedAt: result.endedAt.toISOString(),
    });
    expect((await readdir(dir)).sort()).toEqual(['input.json', 'output.json']);
    // Each file appears as a temp file first, then under its name (a rename event per name), in order.
    const renames = (): string[] => [...new Set(events.filter((e) => e.startsWith('rename ')).map((e) => e.slice(7).replace(/\.[0-9a-f]{12}\.tmp$/, '.TMP')))];
    for (let i = 0; i < 200 && !renames().includes('output.json'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    watcher.close();
    expect(renames()).toEqual(['input.json.TMP', 'input.json', 'output.json.TMP', 'output.json']);
  });

  it('keeps the full, uncapped streams in output.json', async () => {
    const root = await tempDir();
    const long = 'y'.repeat(50_000);
    injection.handlers.set('echo', async () => capture(long));
    await make({ recordDir: root, projectionHeadBytes: 10, projectionTailBytes: 10 }).execute({ id: 'big', name: 'echo', input: { text: '' }, agent: 'a' });
    const output = JSON.parse(await readFile(join(root, 'a', 'big', 'output.json'), 'utf8'));
    expect(output.stdout).toBe(long);
  });

  it('records synthetic captures too, with their failure kind', async () => {
    const root = await tempDir();
    await make({ recordDir: root }).execute({ id: 'bad', name: 'echo', input: { text: 1 }, agent: 'a' });
    const output = JSON.parse(await readFile(join(root, 'a', 'bad', 'output.json'), 'utf8'));
    expect(output).toMatchObject({ exitCode: 65, failure: 'invalid_input', stdout: '' });
  });

  it('refuses agents and call ids that would leave the record root', () => {
    const record = new DiskRecord('/tmp/records');
    for (const bad of ['..', '.', 'a/b', '../x', 'a\\b', '', 'x'.repeat(129), 'a b']) {
      expect(() => record.dirOf(bad, 'ok')).toThrow(TypeError);
      expect(() => record.dirOf('ok', bad)).toThrow(TypeError);
    }
    expect(record.dirOf('agent.1', 'call_2-x')).toBe('/tmp/records/agent.1/call_2-x');
  });

  it('logs a record write failure and still answers with the capture', async () => {
    const root = await tempDir();
    const file = join(root, 'not-a-dir');
    await writeFile(file, '');
    const error = vi.fn();
    const logger: Logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error };
    const result = completed(await make({ recordDir: file, logger }).execute({ name: 'echo', input: { text: 'ok' }, agent: 'a' }));
    expect(result.envelope.text).toBe('Exit code: 0\nok\n');
    expect(error).toHaveBeenCalledTimes(2);
  });

  it('rate-limits the error lines of failing record writes (maxLogLinesPerHost per logWindowMs), then says how many it suppressed', async () => {
    const root = await tempDir();
    const file = join(root, 'not-a-dir');
    await writeFile(file, '');
    const { logger, entries } = recordingLogger();
    const executor = make({ recordDir: file, logger, maxLogLinesPerHost: 3, logWindowMs: 200 });
    for (let i = 0; i < 10; i++) expect(completed(await executor.execute({ name: 'echo', input: { text: 'ok' }, agent: 'a' })).capture.exitCode).toBe(0);
    const errors = (): LogEntry[] => entries.filter((e) => e.level === 'error');
    expect(errors().map((e) => e.msg)).toEqual(['disk record write failed', 'disk record write failed', 'disk record write failed']);
    await new Promise((resolve) => setTimeout(resolve, 250)); // the window passes
    await executor.execute({ name: 'echo', input: { text: 'ok' }, agent: 'a' });
    expect(errors()[3]).toEqual({ level: 'error', obj: { suppressed: 17 }, msg: '17 more disk record write failures suppressed' });
    expect(
      errors()
        .slice(4)
        .map((e) => e.msg),
    ).toEqual(['disk record write failed', 'disk record write failed']);
  });
});

describe('stop', () => {
  it('stops only the calls of the named agent, each settling 130', async () => {
    const entered: string[] = [];
    let bothIn!: () => void;
    const ready = new Promise<void>((r) => (bothIn = r));
    injection.handlers.set(
      'echo',
      holdUntilStopped((call) => {
        entered.push(call.agent);
        if (entered.length === 2) bothIn();
      }),
    );
    const ex = make();
    const a = ex.execute({ name: 'echo', input: { text: 'a' }, agent: 'alice' });
    const b = ex.execute({ name: 'echo', input: { text: 'b' }, agent: 'bob' });
    await ready;
    expect(ex.inFlight).toBe(2);
    expect(ex.stop('alice')).toBe(1);
    expect(completed(await a).capture.exitCode).toBe(130);
    expect(ex.inFlight).toBe(1);
    expect(ex.stop('alice')).toBe(0);
    expect(ex.stop()).toBe(1);
    expect(completed(await b).capture.exitCode).toBe(130);
    expect(ex.inFlight).toBe(0);
    await ex.whenIdle();
  });

  it('settles 130 without routing when the stop lands before routing', async () => {
    let inControl!: () => void;
    const controlled = new Promise<void>((r) => (inControl = r));
    const toolControl: ToolControl = () => {
      inControl();
      return new Promise(() => {}); // a hook that never answers
    };
    const ex = make({}, { toolControl });
    const call = ex.execute({ name: 'echo', input: { text: 'a' }, agent: 'alice' });
    await controlled;
    expect(ex.stop()).toBe(1);
    const result = completed(await call);
    expect(result.capture.exitCode).toBe(130);
    expect(text(result.capture.stderr)).toBe('toolwire: call stopped before it was routed\n');
    expect(injection.routed).toHaveLength(0);
  });

  it('treats an already-aborted request signal as a stop before routing', async () => {
    const result = completed(await make().execute({ name: 'echo', input: { text: 'a' }, agent: 'a', signal: AbortSignal.abort() }));
    expect(result.capture.exitCode).toBe(130);
    expect(injection.routed).toHaveLength(0);
  });

  it('aborts the routed signal when the request signal aborts', async () => {
    let entered!: () => void;
    const routed = new Promise<void>((r) => (entered = r));
    injection.handlers.set(
      'echo',
      holdUntilStopped(() => entered()),
    );
    const ac = new AbortController();
    const call = make().execute({ name: 'echo', input: { text: 'a' }, agent: 'a', signal: ac.signal });
    await routed;
    ac.abort();
    expect(completed(await call).capture.exitCode).toBe(130);
  });
});
