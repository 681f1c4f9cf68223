/**
 * The burst attack (issue 11, "No peer can starve the others"): a hostile server sends `calls` calls
 * at once to a real `toolwire host` whose one tool is a subprocess that marks its start, and — for
 * `seconds` — sends the next burst as soon as the last one is answered. It reports what the host
 * did: answers by exit code, calls never answered, tools started (and started after their call was
 * answered, or though it was refused), the peak of tool processes running at once, what was left
 * running after the host stopped, and the host's and its spawn helper's peak RSS.
 *
 * A well-behaved host: every call answered; `peakTools` ≤ its `--max-concurrent`; no tool started
 * after its answer or for a call answered 75 or "not started"; nothing left. Linux only (/proc).
 *
 * @example const report = await burstServer({ calls: 10_000, seconds: 30, hostArgs: ['--max-concurrent', '16'] });
 */
import { markedProcesses, killProcesses } from '../procs.js';
import { type HostProcess, HostileServer, peakRssKiB } from './hostile-server.js';

/** What to throw at the host. Times in ms, sizes in bytes. */
export interface BurstOptions {
  /** Calls per burst, all sent in one go. Default 10,000. */
  calls?: number;
  /** `deadlineMs` of every call. Default 3000. */
  deadlineMs?: number;
  /** How long the tool runs (after reading its input). Default 200. */
  toolMs?: number;
  /** Keep sending bursts (each once the last is answered) until this many seconds passed. Default 0: one burst. */
  seconds?: number;
  /** Padding added to each call's input. Default 0. Frames over 1 MiB are sent one after the other, each once the last left. */
  inputBytes?: number;
  /** Extra `toolwire host` flags, e.g. `['--max-concurrent', '16', '--max-queued', '256']`. */
  hostArgs?: string[];
  /** Manifest `max_concurrency` of the tool. Default none. */
  maxConcurrency?: number;
  /** Longest wait for a burst's answers after its deadline, ms. Default 15,000. */
  settleMs?: number;
}

/** What the host did. */
export interface BurstReport {
  bursts: number;
  sent: number;
  answered: number;
  /** Calls with no answer at the end (a host bug: every call must be answered). */
  unanswered: number;
  /** Answers by exit code, e.g. `{ "0": 160, "75": 9728, "124": 112 }`. */
  byExitCode: Record<string, number>;
  /** 124s answered while the call waited in the host's queue (its tool never started). */
  expiredQueued: number;
  /** Tools that wrote their start marker. */
  started: number;
  /** Tools that started after their call was answered, or whose call was never answered. */
  startedAfterAnswer: number;
  /** Tools that started though their call was answered 75 or "was not started". */
  startedThoughRefused: number;
  /** Most tool processes (one group leader per call) seen running at once, sampled every 10 ms. */
  peakTools: number;
  /** Processes of the attack still running 5 s after the host stopped (all SIGKILLed then). */
  leftover: number;
  /** Peak RSS (VmHWM) of the host process and of its spawn helper, KiB. */
  hostPeakRssKiB: number;
  helperPeakRssKiB: number;
  /** Wall time of the attack, ms. */
  ms: number;
  /** The host's last log lines (stderr). */
  hostLog: string;
}

/** Sample `fn` every `ms` until the returned stop function is called. */
function every(ms: number, fn: () => void): () => void {
  const timer = setInterval(fn, ms);
  return () => clearInterval(timer);
}

/** Run the burst attack against a fresh `toolwire host`; see {@link BurstOptions}. Never leaves a process behind. */
export async function burstServer(options: BurstOptions = {}): Promise<BurstReport> {
  const calls = options.calls ?? 10_000;
  const deadlineMs = options.deadlineMs ?? 3_000;
  const toolMs = options.toolMs ?? 200;
  const settleMs = options.settleMs ?? 15_000;
  const pad = 'x'.repeat(options.inputBytes ?? 0);
  const t0 = Date.now();
  const server = await HostileServer.start();
  let host: HostProcess | undefined;
  let stopSampling = (): void => {};
  try {
    const work: Record<string, unknown> = {
      description: 'marks its start, reads its input, sleeps',
      command: ['sh', '-c', 'echo "$TOOLWIRE_CALL_ID $(date +%s%3N)" >> "$ATTACK_MARKS"; cat >/dev/null; sleep "$1"; echo done', 'work', String(toolMs / 1000)],
    };
    if (options.maxConcurrency !== undefined) work.max_concurrency = options.maxConcurrency;
    const h = await server.spawnHost({ schema: 1, tools: { work } }, options.hostArgs ?? []);
    host = h;
    let peakTools = 0;
    let helperPeak = 0;
    stopSampling = every(10, () => {
      peakTools = Math.max(peakTools, server.tools(h).length);
      helperPeak = Math.max(helperPeak, peakRssKiB(server.helperOf(h)));
    });
    let sent = 0;
    let bursts = 0;
    do {
      const ids = Array.from({ length: calls }, (_, n) => `b${bursts}-${n}`);
      if (pad.length > 1024 * 1024) {
        // Large frames one after the other (each once the last left): the burst arrives as fast as the host reads.
        await new Promise<void>((resolve) => {
          const next = (n: number): void => {
            if (n === ids.length) return resolve();
            server.call(ids[n]!, 'work', { pad }, deadlineMs, () => next(n + 1));
          };
          next(0);
        });
      } else {
        for (const id of ids) server.call(id, 'work', { pad }, deadlineMs);
      }
      sent += ids.length;
      bursts++;
      await server.until(() => ids.every((id) => server.answers.has(id)), deadlineMs + settleMs, `burst ${bursts} answered`).catch(() => {});
    } while (Date.now() - t0 < (options.seconds ?? 0) * 1000);
    stopSampling();
    const hostPeakRssKiB = peakRssKiB(h.pid);
    helperPeak = Math.max(helperPeak, peakRssKiB(server.helperOf(h)));
    await server.stopHost(h);
    let left = markedProcesses(server.runId);
    for (const end = Date.now() + 5_000; left.length > 0 && Date.now() < end; left = markedProcesses(server.runId)) await new Promise((r) => setTimeout(r, 50));
    killProcesses(left);

    const byExitCode: Record<string, number> = {};
    let expiredQueued = 0;
    for (const a of server.answers.values()) {
      byExitCode[a.exitCode] = (byExitCode[a.exitCode] ?? 0) + 1;
      if (a.exitCode === 124 && a.stderr.includes('was not started')) expiredQueued++;
    }
    const marks = server.marks();
    let startedAfterAnswer = 0;
    let startedThoughRefused = 0;
    for (const [id, at] of marks) {
      const answer = server.answers.get(id);
      if (answer === undefined || at > answer.at) startedAfterAnswer++;
      if (answer !== undefined && (answer.exitCode === 75 || answer.stderr.includes('was not started'))) startedThoughRefused++;
    }
    return {
      bursts,
      sent,
      answered: server.answers.size,
      unanswered: sent - server.answers.size,
      byExitCode,
      expiredQueued,
      started: marks.size,
      startedAfterAnswer,
      startedThoughRefused,
      peakTools,
      leftover: left.length,
      hostPeakRssKiB,
      helperPeakRssKiB: helperPeak,
      ms: Date.now() - t0,
      hostLog: h.stderr().slice(-2000),
    };
  } finally {
    stopSampling();
    await server.close();
    if (host !== undefined) killProcesses(markedProcesses(server.runId));
  }
}
