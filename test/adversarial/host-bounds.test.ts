/**
 * Issue 11 — no peer can starve the others, host side: what a server (buggy or hostile) sends is
 * bounded on the tool host too (calls running at once, a bounded queue, input bytes held; 75 past
 * the bounds, 124 for a call whose deadline passes while it waits, and no tool ever started after
 * its call was answered), and no tool outlives its host even when the host and its spawn helper
 * are SIGKILLed together. Real `toolwire host` processes against a hostile server
 * (test/soak/attacks/); Linux only (/proc).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { burstServer } from '../soak/attacks/burst-server.js';
import { HostileServer, childrenOf } from '../soak/attacks/hostile-server.js';
import { killProcesses, markedProcesses } from '../soak/procs.js';
import { waitFor } from '../helpers.js';

const servers: HostileServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    await s.close();
    // The host's reaper ends by itself once the host is gone (and removes its registry); anything else is killed.
    await waitFor(() => markedProcesses(s.runId).length === 0, 'the attack processes to end', 3_000).catch(() => {});
    killProcesses(markedProcesses(s.runId));
  }
});

async function hostile(): Promise<HostileServer> {
  const s = await HostileServer.start();
  servers.push(s);
  return s;
}

/** A tool that marks its start, then runs `seconds` with a grandchild (a backgrounded sleep). */
const MARK = 'echo "$TOOLWIRE_CALL_ID $(date +%s%3N)" >> "$ATTACK_MARKS"';
function sleeper(seconds: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: ['sh', '-c', `${MARK}; sleep ${seconds} & sleep ${seconds}; wait`], ...extra };
}

describe('a host bounds what a server can make it do', () => {
  it('10,000 calls in one burst: at most 16 tools run at once, every call is answered (75 past the queue, 124 for calls whose deadline passed while queued), no tool starts after its answer', async () => {
    const r = await burstServer({ calls: 10_000, deadlineMs: 3_000, toolMs: 200, hostArgs: ['--max-concurrent', '16', '--max-queued', '256'] });
    const context = JSON.stringify({ ...r, hostLog: r.hostLog.slice(-500) });
    expect(r.unanswered, context).toBe(0);
    expect(Object.keys(r.byExitCode).sort(), context).toEqual(['0', '124', '75']);
    expect(r.byExitCode['75'], context).toBeGreaterThanOrEqual(9_000); // 16 run and 256 wait; what finishes during the burst makes room
    expect(r.expiredQueued, context).toBeGreaterThan(0);
    expect(r.peakTools, context).toBeGreaterThan(0);
    expect(r.peakTools, context).toBeLessThanOrEqual(16);
    expect(r.started, context).toBeLessThanOrEqual(r.byExitCode['0']! + r.byExitCode['124']! - r.expiredQueued);
    expect([r.startedAfterAnswer, r.startedThoughRefused, r.leftover], context).toEqual([0, 0, 0]);
  }, 90_000);

  it('100 calls with 4 MiB of input each: every call answered (75 past the input bytes held), the host stays far below 1 GB', async () => {
    const r = await burstServer({ calls: 100, inputBytes: 4 * 1024 * 1024, deadlineMs: 30_000, toolMs: 50 });
    const context = JSON.stringify({ ...r, hostLog: r.hostLog.slice(-500) });
    expect(r.unanswered, context).toBe(0);
    expect(r.byExitCode['75'] ?? 0, context).toBeGreaterThan(0);
    expect((r.byExitCode['0'] ?? 0) + (r.byExitCode['75'] ?? 0), context).toBe(100);
    expect([r.startedAfterAnswer, r.startedThoughRefused, r.leftover], context).toEqual([0, 0, 0]);
    // Before issue 11: 1.2 GB for the host (helper 0.5 GB). Figures in bench/README.md "Abuse bounds (issue 11)".
    expect(r.hostPeakRssKiB / 1024, context).toBeLessThan(600);
    expect(r.helperPeakRssKiB / 1024, context).toBeLessThan(400);
    console.log(
      `[abuse bounds] 100 × 4 MiB: host peak RSS ${(r.hostPeakRssKiB / 1024).toFixed(0)} MiB, helper ${(r.helperPeakRssKiB / 1024).toFixed(0)} MiB, answers ${JSON.stringify(r.byExitCode)}`,
    );
  }, 90_000);

  it('a cancel of a queued call answers 130 at once and its tool never starts; the running calls go on', async () => {
    const s = await hostile();
    const host = await s.spawnHost({ schema: 1, tools: { slow: sleeper(30) } }, ['--max-concurrent', '2']);
    for (const id of ['r1', 'r2', 'q3', 'q4']) s.call(id, 'slow', {}, 60_000);
    await waitFor(() => s.marks().size === 2, 'two tools to start', 10_000);
    s.cancel('q3');
    await s.until(() => s.answers.has('q3'), 5_000, 'q3 answered');
    expect(s.answers.get('q3')).toMatchObject({ exitCode: 130 });
    expect(s.answers.get('q3')!.stderr).toMatch(/cancelled by stop; the call was waiting for a place to run and its tool was not started/);
    expect([...s.marks().keys()].sort()).toEqual(['r1', 'r2']);
    expect(s.tools(host)).toHaveLength(2);
    // A place frees: the next waiting call (q4) starts, the cancelled one never does.
    s.cancel('r1');
    await s.until(() => s.answers.has('r1'), 5_000, 'r1 answered');
    expect(s.answers.get('r1')!.exitCode).toBe(130);
    await waitFor(() => s.marks().has('q4'), 'q4 to start', 10_000);
    expect(s.marks().has('q3')).toBe(false);
    s.cancel('r2');
    s.cancel('q4');
    await s.until(() => s.answers.size === 4, 10_000, 'every call answered');
    await s.stopHost(host);
  }, 60_000);

  it("a tool's max_concurrency holds its own calls back while another tool's calls run", async () => {
    const s = await hostile();
    const host = await s.spawnHost({ schema: 1, tools: { one: sleeper(30, { max_concurrency: 1 }), other: sleeper(30) } }, ['--max-concurrent', '4']);
    s.call('one-1', 'one', {}, 60_000);
    s.call('one-2', 'one', {}, 60_000);
    s.call('other-1', 'other', {}, 60_000);
    s.call('other-2', 'other', {}, 60_000);
    await waitFor(() => s.marks().size === 3, 'three tools to start', 10_000);
    expect([...s.marks().keys()].sort()).toEqual(['one-1', 'other-1', 'other-2']);
    s.cancel('one-1');
    await waitFor(() => s.marks().has('one-2'), 'one-2 to start once one-1 ended', 10_000);
    for (const id of ['one-2', 'other-1', 'other-2']) s.cancel(id);
    await s.until(() => s.answers.size === 4, 10_000, 'every call answered');
    expect([...s.answers.values()].map((a) => a.exitCode)).toEqual([130, 130, 130, 130]);
    await s.stopHost(host);
  }, 60_000);
});

describe('no tool outlives its host', () => {
  it('the host and its spawn helper SIGKILLed together while 5 tools (with grandchildren) run: no tool is left', async () => {
    const s = await hostile();
    const host = await s.spawnHost({ schema: 1, tools: { slow: sleeper(300) } });
    for (let i = 0; i < 5; i++) s.call(`k${i}`, 'slow', {}, 600_000);
    await waitFor(() => s.marks().size === 5 && s.tools(host).length === 5, 'five tools to run', 10_000);
    const helper = s.helperOf(host);
    expect(helper).toBeGreaterThan(0);
    const reaper = childrenOf(host.pid).find((p) => p !== helper); // the host's other child: its orphan reaper
    expect(reaper).toBeGreaterThan(0);
    const tools = () => markedProcesses(s.runId).filter((p) => ![host.pid, helper, reaper].includes(p.pid));
    expect(tools().length).toBeGreaterThanOrEqual(10); // 5 tools, each with two sleeps
    process.kill(host.pid, 'SIGKILL');
    process.kill(helper!, 'SIGKILL');
    await waitFor(() => tools().length === 0 && markedProcesses(s.runId).length === 0, 'every tool (and the reaper) to be gone', 5_000);
  }, 60_000);
});
