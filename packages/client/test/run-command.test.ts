import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CallAborted, deadlineAbort } from '../src/calls/abort.js';
import { type RunCommandOptions, runCommandTool } from '../src/subprocess/run-command.js';
import type { CallFacts, CommandSpec } from '../src/types.js';
import { isGone, poll, useScratch } from './helpers/process.js';

const schema = { type: 'object' };
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

function ctx(signal = new AbortController().signal, over: Partial<CallFacts> = {}): CallFacts {
  return { id: 'c1', agent: 'agent-7', workspace: '/ws/a', deadlineMs: 5000, signal, ...over };
}
const sh = (script: string, extra: Partial<CommandSpec> = {}): CommandSpec => ({ inputSchema: schema, command: ['sh', '-c', script], ...extra });

const scratch = useScratch('toolwire-run-');

describe.each([
  { spawnHelper: true, how: 'spawned by the spawn helper' },
  { spawnHelper: false, how: 'spawned by this process' },
])('runCommandTool, tools $how', ({ spawnHelper }) => {
  const runTool = (spec: CommandSpec, input: unknown, c: CallFacts, options: RunCommandOptions = {}) => runCommandTool(spec, input, c, { spawnHelper, ...options });

  it('writes the input JSON to stdin, then EOF', async () => {
    const c = await runTool({ inputSchema: schema, command: ['cat'] }, { path: 'a b', n: [1, 2] }, ctx());
    expect(c.exitCode).toBe(0);
    expect(JSON.parse(text(c.stdout))).toEqual({ path: 'a b', n: [1, 2] });
  });

  it('sets TOOLWIRE_* variables and the tool env on top of the inherited env', async () => {
    const script = 'printf "%s|%s|%s|%s|%s|%s" "$TOOLWIRE_CALL_ID" "$TOOLWIRE_AGENT" "$TOOLWIRE_WORKSPACE" "$TOOLWIRE_DEADLINE_MS" "$EXTRA" "$PATH"';
    const c = await runTool(sh(script, { env: { EXTRA: 'x y' } }), {}, ctx(undefined, { deadlineMs: 1234 }));
    expect(text(c.stdout)).toBe(`c1|agent-7|/ws/a|1234|x y|${process.env.PATH}`);
  });

  it('runs in the tool cwd resolved against the root, else in the root', async () => {
    await writeFile(join(scratch.dir, 'marker'), '');
    const inRoot = await runTool(sh('pwd'), {}, ctx(), { root: scratch.dir });
    expect(text(inRoot.stdout).trim()).toBe(scratch.dir);
    const rel = await runTool(sh('pwd', { cwd: '..' }), {}, ctx(), { root: scratch.dir });
    expect(text(rel.stdout).trim()).toBe(join(scratch.dir, '..'));
  });

  it('passes the tool exit code and stderr through', async () => {
    const c = await runTool(sh('echo out; echo err >&2; exit 3'), {}, ctx());
    expect(c).toMatchObject({ exitCode: 3 });
    expect(text(c.stdout)).toBe('out\n');
    expect(text(c.stderr)).toBe('err\n');
    expect(c.failure).toBeUndefined();
  });

  it('reports 127 for a missing command, with the reason on stderr', async () => {
    const c = await runTool({ inputSchema: schema, command: ['toolwire-no-such-command-xyz'] }, {}, ctx());
    expect(c.exitCode).toBe(127);
    expect(c.failure).toBe('not_found');
    expect(text(c.stderr)).toBe('toolwire: command not found: "toolwire-no-such-command-xyz"\n');
  });

  it('reports 126 for a file that is not executable', async () => {
    const file = join(scratch.dir, 'tool.sh');
    await writeFile(file, '#!/bin/sh\necho hi\n');
    await chmod(file, 0o644);
    const c = await runTool({ inputSchema: schema, command: [file] }, {}, ctx());
    expect(c.exitCode).toBe(126);
    expect(text(c.stderr)).toMatch(/^toolwire: cannot execute .*EACCES/);
  });

  it('reports 126 when the cwd does not exist', async () => {
    const c = await runTool(sh('true', { cwd: join(scratch.dir, 'missing') }), {}, ctx());
    expect(c.exitCode).toBe(126);
    expect(text(c.stderr)).toMatch(/is not a directory/);
  });

  it('reports 128+n for a tool killed by a signal toolwire did not send', async () => {
    const c = await runTool(sh('echo before; kill -KILL $$'), {}, ctx());
    expect(c.exitCode).toBe(137);
    expect(text(c.stdout)).toBe('before\n');
    expect(text(c.stderr)).toBe('toolwire: killed by signal SIGKILL\n');
  });

  it('does not treat output split across many chunks differently (large stdout passes whole under the cap)', async () => {
    const c = await runTool({ inputSchema: schema, command: ['node', '-e', 'process.stdout.write("x".repeat(300000))'] }, {}, ctx());
    expect(c.stdout.length).toBe(300000);
  });

  it('caps each stream to head + tail with one marker line between', async () => {
    const script = 'let s=""; for (let i=0;i<10000;i++) s+=`line ${i}\\n`; process.stdout.write(s); process.stderr.write("e".repeat(5000))';
    const c = await runTool({ inputSchema: schema, command: ['node', '-e', script] }, {}, ctx(), { maxCaptureBytes: 1000 });
    const out = text(c.stdout);
    expect(out.startsWith('line 0\nline 1\n')).toBe(true);
    expect(out.endsWith('line 9999\n')).toBe(true);
    expect(out).toMatch(/\[\.\.\. stdout truncated: 98890 bytes \/ 10000 lines total; showing the first 500 and last 500 bytes \.\.\.\]\n/);
    expect(c.stdout.length).toBeLessThan(1200);
    expect(text(c.stderr)).toMatch(/stderr truncated: 5000 bytes/);
    expect(c.exitCode).toBe(0);
  });

  it('on cancel kills the whole process group, keeps partial output, and answers 130 within grace + drain', async () => {
    const pidFile = join(scratch.dir, 'grandchild.pid');
    // The grandchild ignores SIGTERM and keeps stdout open; the leader dies on SIGTERM.
    const script = `echo started; (trap "" TERM; exec sleep 1000) & echo $! > ${pidFile}; wait`;
    const controller = new AbortController();
    const running = runTool(sh(script), {}, ctx(controller.signal), { cancelGraceMs: 300, drainMs: 200 });
    const grandchild = await scratch.readPid(pidFile);
    const t0 = Date.now();
    controller.abort(new CallAborted('cancelled', 'cancelled by stop'));
    const c = await running;
    expect(Date.now() - t0).toBeLessThan(300 + 200 + 400);
    expect(c.exitCode).toBe(130);
    expect(c.failure).toBe('cancelled');
    expect(text(c.stdout)).toBe('started\n');
    expect(text(c.stderr)).toBe('toolwire: cancelled by stop\n');
    await poll(() => isGone(grandchild), 2000, `grandchild ${grandchild} to be gone`);
  });

  it('sends SIGKILL to a tool that ignores SIGTERM after the grace', async () => {
    const pidFile = join(scratch.dir, 'leader.pid');
    const script = `trap "" TERM; echo $$ > ${pidFile}; while :; do sleep 0.05; done`;
    const controller = new AbortController();
    const running = runTool(sh(script), {}, ctx(controller.signal), { cancelGraceMs: 200, drainMs: 100 });
    const leader = await scratch.readPid(pidFile);
    const t0 = Date.now();
    controller.abort(new CallAborted('cancelled', 'cancelled by stop'));
    const c = await running;
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect(elapsed).toBeLessThan(200 + 100 + 400);
    expect(c.exitCode).toBe(130);
    await poll(() => isGone(leader), 2000, 'leader to be gone');
  });

  it('answers 124 with the deadline reason when aborted by the deadline', async () => {
    const controller = new AbortController();
    const pidFile = join(scratch.dir, 'p.pid');
    const running = runTool(sh(`echo $$ > ${pidFile}; echo partial; exec sleep 1000`), {}, ctx(controller.signal));
    await scratch.readPid(pidFile);
    controller.abort(deadlineAbort(50));
    const c = await running;
    expect(c.exitCode).toBe(124);
    expect(c.failure).toBe('deadline');
    expect(text(c.stderr)).toBe('toolwire: deadline of 50 ms exceeded\n');
  });

  it('does not start the tool when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new CallAborted('cancelled', 'cancelled by stop'));
    const c = await runTool(sh(`touch ${join(scratch.dir, 'ran')}`), {}, ctx(controller.signal));
    expect(c.exitCode).toBe(130);
    await expect(readFile(join(scratch.dir, 'ran'))).rejects.toThrow();
  });

  it('kills a backgrounded grandchild that holds the pipes after a normal exit, after the drain', async () => {
    const pidFile = join(scratch.dir, 'bg.pid');
    const t0 = Date.now();
    const c = await runTool(sh(`sleep 1000 & echo $! > ${pidFile}; echo done`), {}, ctx(), { drainMs: 150 });
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(c.exitCode).toBe(0);
    expect(text(c.stdout)).toBe('done\n');
    const bg = await scratch.readPid(pidFile);
    await poll(() => isGone(bg), 2000, 'background process to be gone');
  });
});
