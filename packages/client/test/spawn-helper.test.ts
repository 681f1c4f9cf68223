/**
 * The spawn helper (src/subprocess/spawn-helper.ts): subprocess tools are spawned by one small
 * helper process; a helper that dies ends its calls 70 and kills their groups; it never keeps the
 * host process alive; output passes whole under backpressure. Linux /proc for parent pids.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BufferedOutput, type OutputStreamName } from '../src/calls/output-sink.js';
import { runCommandTool } from '../src/subprocess/run-command.js';
import { spawnHelperPid } from '../src/subprocess/spawn-helper.js';
import type { CallFacts, CommandSpec } from '../src/types.js';
import { isGone, poll, useScratch } from './helpers/process.js';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const here = dirname(fileURLToPath(import.meta.url));
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const ctx = (id = 'h1'): CallFacts => ({ id, agent: 'a', workspace: '/ws', deadlineMs: 5000, signal: new AbortController().signal });
const sh = (script: string): CommandSpec => ({ inputSchema: {}, command: ['sh', '-c', script] });
const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);

const scratch = useScratch('toolwire-helper-');

/** Buffered output that counts the bytes written into it as they arrive. */
class CountingOutput extends BufferedOutput {
  arrived = 0;
  override write(stream: OutputStreamName, bytes: Uint8Array): Promise<void> {
    this.arrived += bytes.length;
    return super.write(stream, bytes);
  }
}

describe('the spawn helper', () => {
  it('spawns the tools: their parent is the helper, a process other than this one', async () => {
    const c = await runCommandTool(sh('cut -d" " -f4 /proc/$$/stat'), {}, ctx());
    expect(c.exitCode).toBe(0);
    const helper = spawnHelperPid();
    expect(helper).toBeDefined();
    expect(helper).not.toBe(process.pid);
    expect(Number(text(c.stdout))).toBe(helper);
    expect(parentOf(helper!)).toBe(process.pid);
  });

  it('keeps concurrent calls apart: 24 at once each get their own output', async () => {
    const captures = await Promise.all(
      Array.from({ length: 24 }, (_, i) => runCommandTool(sh(`cat; echo " $TOOLWIRE_CALL_ID"; echo e${i} >&2; exit ${i % 5}`), { i }, ctx(`c${i}`))),
    );
    captures.forEach((c, i) => {
      expect(text(c.stdout)).toBe(`{"i":${i}} c${i}\n`);
      expect(text(c.stderr)).toBe(`e${i}\n`);
      expect(c.exitCode).toBe(i % 5);
    });
  });

  it('passes a large output whole through backpressure, and caps it like a local spawn', async () => {
    const bytes = 24 * 1024 * 1024;
    const whole = await runCommandTool(sh(`head -c ${bytes} /dev/zero`), {}, ctx(), { maxCaptureBytes: 32 * 1024 * 1024 });
    expect(whole.stdout.length).toBe(bytes);
    const capped = await runCommandTool(sh(`head -c ${bytes} /dev/zero`), {}, ctx(), { maxCaptureBytes: 1000 });
    expect(text(capped.stdout)).toMatch(new RegExp(`stdout truncated: ${bytes} bytes`));
  });

  it('hands a big output’s pipes to this process: past 256 KiB the output still arrives while the helper is stopped, and the capture is whole', async () => {
    const output = new CountingOutput(8 * 1024 * 1024);
    const arrived = () => output.arrived;
    const pidFile = join(scratch.dir, 'big.pid');
    const go = join(scratch.dir, 'go');
    const script = `head -c 400000 /dev/zero; echo $$ > ${pidFile}; while [ ! -e ${go} ]; do sleep 0.02; done; head -c 100000 /dev/zero; echo done >&2`;
    const running = runCommandTool(sh(script), {}, ctx('big'), { output });
    await scratch.readPid(pidFile);
    await poll(() => arrived() >= 400_000, 5000, 'the first 400000 bytes');
    const helper = spawnHelperPid()!;
    process.kill(helper, 'SIGSTOP');
    try {
      await writeFile(go, '');
      await poll(() => arrived() >= 500_005, 5000, 'the rest, read here while the helper is stopped');
    } finally {
      process.kill(helper, 'SIGCONT');
    }
    const c = await running;
    expect([c.exitCode, c.stdout.length, c.stdout.every((b) => b === 0), text(c.stderr)]).toEqual([0, 500_000, true, 'done\n']);
  });

  it('a stop after the pipes were handed over: 130 with the output so far, and the whole group is killed (a background holder of the pipes too)', async () => {
    const pidFile = join(scratch.dir, 'holder.pid');
    const abort = new AbortController();
    const output = new CountingOutput(8 * 1024 * 1024);
    const script = `head -c 300000 /dev/zero; sleep 1000 & echo $! > ${pidFile}; printf tail; wait`;
    const running = runCommandTool(sh(script), {}, { ...ctx('stop'), signal: abort.signal }, { cancelGraceMs: 300, drainMs: 300, output });
    const holder = await scratch.readPid(pidFile);
    await poll(() => output.arrived === 300_004, 5000, 'the output so far');
    abort.abort();
    const c = await running;
    expect(c.exitCode).toBe(130);
    expect(c.stdout.length).toBe(300_004);
    await poll(() => isGone(holder), 3000, 'the background holder to be gone');
  });

  it('a helper killed mid-call: the call ends 70 with the reason and the output that had arrived, the tool group is killed, the next call starts a new helper', async () => {
    const pidFile = join(scratch.dir, 'leader.pid');
    const running = runCommandTool(sh(`echo partial; echo $$ > ${pidFile}; exec sleep 1000`), {}, ctx());
    const leader = await scratch.readPid(pidFile);
    const helper = spawnHelperPid()!;
    await poll(() => parentOf(leader) === helper, 2000, 'the tool to be the helper’s child');
    process.kill(helper, 'SIGKILL');
    const c = await running;
    expect(c.exitCode).toBe(70);
    expect('partial\n'.startsWith(text(c.stdout))).toBe(true); // forwarded in batches: what had arrived
    expect(text(c.stderr)).toBe('toolwire: spawn helper exited (SIGKILL)\n');
    await poll(() => isGone(leader), 2000, 'the tool to be gone');
    const next = await runCommandTool({ inputSchema: {}, command: ['cat'] }, { again: true }, ctx());
    expect(text(next.stdout)).toBe('{"again":true}');
    expect(spawnHelperPid()).not.toBe(helper);
  });

  it('never keeps the process alive: a script that ran a tool exits by itself', async () => {
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, join(here, 'fixtures', 'one-call.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const [code] = (await once(child, 'close')) as [number | null]; // at 'exit' stdout may still be unread
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(out).toBe('{"ok":1}');
  });
});
