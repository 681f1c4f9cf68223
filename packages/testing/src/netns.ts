/**
 * Whether the kernel-level half-open mode (a host in its own network namespace, joined by a veth
 * pair, its packets dropped by the kernel) could run here: root, Linux, and `ip netns` plus `nft`,
 * `iptables` or `tc`. This version ships the detection only; the proxy (`FaultProxy.blackhole()`)
 * is the mode that works everywhere. A test of the kernel mode skips with `reason`.
 */
import { spawnSync } from 'node:child_process';

/** `available`, or why not. */
export type NetnsSupport = { available: true; dropper: 'nft' | 'iptables' | 'tc' } | { available: false; reason: string };

const runs = (command: string, args: string[]): boolean => {
  const r = spawnSync(command, args, { stdio: 'ignore', timeout: 5_000 });
  return r.error === undefined && r.status === 0;
};

/** Detect the netns mode's requirements (synchronous, a few short commands; cached). */
export function netnsSupport(): NetnsSupport {
  cached ??= detect();
  return cached;
}

let cached: NetnsSupport | undefined;

function detect(): NetnsSupport {
  if (process.platform !== 'linux') return { available: false, reason: `netns mode needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { available: false, reason: 'netns mode needs root (ip netns add); the proxy mode needs none' };
  if (!runs('ip', ['netns', 'list'])) return { available: false, reason: 'netns mode needs `ip netns` (iproute2), which is missing or not permitted here' };
  for (const [dropper, args] of [
    ['nft', ['--version']],
    ['iptables', ['--version']],
    ['tc', ['-V']],
  ] as const) {
    if (runs(dropper, [...args])) return { available: true, dropper };
  }
  return { available: false, reason: 'netns mode needs nft, iptables or tc to drop packets, and none runs here' };
}
