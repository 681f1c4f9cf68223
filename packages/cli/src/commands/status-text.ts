/**
 * `toolwire status` as text: hosts, tools, calls in flight and recent failures, one line each,
 * fields separated by two spaces (easy to read, easy to `grep`). From a cluster node: first the
 * cluster's nodes, then every host of every node with `node <id>`, and each call with its host's node.
 * Peers' text — a host's tool titles and descriptions, a caller's tool name (cut to 80 characters) —
 * is shown with its control characters escaped (`terminal-text.ts`).
 */
import type { StatusSnapshot } from '@toolwire/server';
import { printable, shownName } from '../terminal-text.js';

/** The snapshot as `GET /status/snapshot` answers it: plus who asked. */
export type StatusAnswer = StatusSnapshot & { you?: { caller: string; grant: string[] } };

/** `ms` as `850 ms`, `12 s`, `3 min 4 s`, `2 h 5 min`. */
export function ago(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** `n` bytes as `512 B`, `1.5 KiB`, `2.0 MiB`. */
export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The whole picture as text (ends with a newline). */
export function statusText(s: StatusAnswer): string {
  const at = s.at;
  const lines: string[] = [];
  if (s.node !== undefined)
    lines.push(`cluster nodes (${s.nodes?.length ?? 1})  ${(s.nodes ?? [s.node]).map((n) => (n === s.node ? `${n} (this one)` : n)).join('  ')}`);
  const onNode = (node: string | undefined): string => (node === undefined ? '' : `  node ${node}`);
  lines.push(`hosts (${s.hosts.length})`);
  if (s.hosts.length === 0) lines.push('  none connected');
  for (const h of s.hosts) {
    // A host on another node is pinged by that node: none of its heartbeats are seen here.
    const elsewhere = h.node !== undefined && h.node !== s.node;
    const beat = elsewhere ? `heartbeats on node ${h.node}` : h.lastHeartbeatAt === undefined ? 'no heartbeat yet' : `heartbeat ${ago(at - h.lastHeartbeatAt)} ago`;
    const proto = h.protocol === undefined ? '' : `  v${h.protocol}`;
    lines.push(
      `  ${h.name}${onNode(h.node)}  ${h.remote ?? '?'}${proto}  connected ${ago(at - h.connectedAt)} ago  ${beat}  ${h.tools.length} tools  ${h.inFlight} in flight`,
    );
  }
  const tools = s.hosts.flatMap((h) => h.tools);
  lines.push(`tools (${tools.length})`);
  for (const t of tools) {
    const notes = Object.entries(t.annotations ?? {})
      .filter(([, v]) => v === true)
      .map(([k]) => k.replace(/Hint$/, ''));
    const title = t.title === undefined ? '' : `  "${printable(t.title)}"`;
    const extra = notes.length > 0 ? `  [${notes.join(', ')}]` : '';
    lines.push(`  ${t.name}${title}${extra}${t.description === undefined ? '' : `  ${printable(t.description)}`}`);
  }
  lines.push(`calls in flight (${s.callsInFlight})`);
  for (const c of s.calls) {
    lines.push(`  ${c.id}  ${shownName(c.tool)}  on ${c.host ?? '(local)'}${onNode(c.node)}  by ${c.agent}  running ${ago(at - c.startedAt)}  ${size(c.bytes)} out`);
  }
  if (s.callsInFlight > s.calls.length) lines.push(`  … and ${s.callsInFlight - s.calls.length} more`);
  const failures = s.recent.filter((c) => c.exitCode !== 0);
  lines.push(`recent failures (${failures.length} of the last ${s.recent.length} calls)`);
  for (const c of failures) {
    const kind = c.failure === undefined ? '' : ` (${c.failure})`;
    lines.push(
      `  ${c.id}  ${shownName(c.tool)}  exit ${c.exitCode}${kind}  on ${c.host ?? '(local)'}${onNode(c.node)}  by ${c.agent}  ended ${ago(at - c.endedAt)} ago`,
    );
  }
  return `${lines.join('\n')}\n`;
}
