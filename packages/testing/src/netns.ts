/**
 * The optional kernel-level half-open mode: where it can run (root, Linux, `ip netns`, `tc`), and
 * the names it uses. A host of `startHost(…, {process: true, netns: true})` runs in a network
 * namespace of its own, joined to this one by a veth pair; `NetnsLink.blackhole()` makes both veth
 * ends drop every packet in the kernel (a `pfifo limit 0` qdisc: nothing is queued, nothing sent,
 * no FIN, no RST), the closest thing to a laptop lid closing. The proxy mode
 * (`FaultProxy.blackhole()`) is the default and works everywhere without root.
 *
 * Names carry the pid of the process that made them (`toolwire-<pid>-<n>`, veths `tw<pid>s<n>` /
 * `tw<pid>h<n>`), so a sweep at the first start of a process deletes the leftovers of processes that
 * died without their exit hook (SIGKILL), and never those of a live one (`/etc/netns/<name>/` too).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';

/** `available`, or why not. `dropper` is how packets are dropped: a `tc` qdisc that queues nothing. */
export type NetnsSupport = { available: true; dropper: 'tc' } | { available: false; reason: string };

/** Run a command synchronously (bounded); its exit status and stderr. */
export function run(command: string, args: readonly string[]): { ok: boolean; stderr: string; stdout: string } {
  const r = spawnSync(command, [...args], { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.error === undefined && r.status === 0, stderr: r.error?.message ?? r.stderr ?? '', stdout: r.stdout ?? '' };
}

/** Detect the netns mode's requirements (synchronous; once per process, a probe of ~50 ms: a namespace, a veth pair and the drop qdisc made and deleted). */
export function netnsSupport(): NetnsSupport {
  cached ??= detect();
  return cached;
}

let cached: NetnsSupport | undefined;

function detect(): NetnsSupport {
  if (process.platform !== 'linux') return { available: false, reason: `netns mode needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { available: false, reason: 'netns mode needs root (ip netns add); the proxy mode needs none' };
  if (!run('ip', ['netns', 'list']).ok) return { available: false, reason: 'netns mode needs `ip netns` (iproute2), which is missing or not permitted here' };
  if (!run('tc', ['-V']).ok) return { available: false, reason: 'netns mode needs `tc` (iproute2) to drop packets, and it does not run here' };
  sweepStale();
  const probe = names(0);
  try {
    for (const [what, args] of [
      ['ip netns add', ['netns', 'add', probe.namespace]],
      ['a veth pair', ['link', 'add', probe.serverVeth, 'type', 'veth', 'peer', 'name', probe.hostVeth, 'netns', probe.namespace]],
    ] as const) {
      const r = run('ip', args);
      if (!r.ok) return { available: false, reason: `netns mode needs ${what}, which failed here: ${r.stderr.trim()}` };
    }
    const r = run('tc', ['qdisc', 'add', 'dev', probe.serverVeth, 'root', 'pfifo', 'limit', '0']);
    if (!r.ok) return { available: false, reason: `netns mode needs the tc pfifo qdisc to drop packets, which failed here: ${r.stderr.trim()}` };
    return { available: true, dropper: 'tc' };
  } finally {
    run('ip', ['link', 'del', probe.serverVeth]);
    run('ip', ['netns', 'del', probe.namespace]);
  }
}

/** The names of the `n`th namespace of this process. */
export function names(n: number, pid = process.pid): { namespace: string; serverVeth: string; hostVeth: string } {
  // A veth name has at most 15 characters: tw + pid (≤ 7 digits) + s|h + n (≤ 4 digits).
  const k = n % 10_000;
  return { namespace: `toolwire-${pid}-${k}`, serverVeth: `tw${pid}s${k}`, hostVeth: `tw${pid}h${k}` };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

let swept = false;

/**
 * Delete the namespaces and veths of this kit whose process is gone (first call per process only;
 * each namespace's processes are SIGKILLed first). Returns what was deleted.
 */
export function sweepStale(): string[] {
  if (swept) return [];
  swept = true;
  const deleted: string[] = [];
  for (const line of run('ip', ['netns', 'list']).stdout.split('\n')) {
    const match = /^(toolwire-(\d+)-\d+)\b/.exec(line);
    if (match === null || alive(Number(match[2]))) continue;
    for (const pid of run('ip', ['netns', 'pids', match[1]!]).stdout.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone
      }
    }
    if (run('ip', ['netns', 'del', match[1]!]).ok) deleted.push(match[1]!);
  }
  let etc: string[] = [];
  try {
    etc = readdirSync('/etc/netns');
  } catch {
    // none
  }
  for (const entry of etc) {
    const match = /^toolwire-(\d+)-\d+$/.exec(entry);
    if (match !== null && !alive(Number(match[1]))) rmSync(`/etc/netns/${entry}`, { recursive: true, force: true });
  }
  for (const line of run('ip', ['-o', 'link', 'show', 'type', 'veth']).stdout.split('\n')) {
    const match = /^\d+:\s+(tw(\d+)[sh]\d+)[@:]/.exec(line);
    if (match === null || alive(Number(match[2]))) continue;
    if (run('ip', ['link', 'del', match[1]!]).ok) deleted.push(match[1]!);
  }
  return deleted;
}
