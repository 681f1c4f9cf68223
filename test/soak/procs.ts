/**
 * Finding every process the soak started, however deep: each carries the environment variable
 * `TOOLWIRE_SOAK=<run id>` (host processes get it, their tools and reapers inherit it). Linux /proc.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** One live (non-zombie) process carrying the marker. */
export interface MarkedProcess {
  pid: number;
  /** Parent pid and process group, from /proc/<pid>/stat. */
  ppid: number;
  pgid: number;
  cmd: string;
}

/** State, parent pid and process group of `pid` (fields 3–5 of /proc/<pid>/stat). */
function stat(pid: number): { state: string; ppid: number; pgid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid, pgid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: state!, ppid: Number(ppid), pgid: Number(pgid) };
  } catch {
    return undefined;
  }
}

/** Live processes (not zombies, not this process) whose environment holds `TOOLWIRE_SOAK=<runId>`. */
export function markedProcesses(runId: string): MarkedProcess[] {
  const needle = Buffer.from(`TOOLWIRE_SOAK=${runId}\0`);
  const out: MarkedProcess[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out; // not Linux: the leak check cannot look (reported as 0 found)
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/environ`).includes(needle)) continue;
      const s = stat(pid);
      if (s === undefined || s.state === 'Z' || s.state === 'X') continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 80);
      out.push({ pid, ppid: s.ppid, pgid: s.pgid, cmd });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** SIGKILL each process (teardown of leaks, after they were counted). */
export function killProcesses(procs: MarkedProcess[]): void {
  for (const { pid } of procs) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
