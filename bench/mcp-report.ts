/**
 * The log line and the table of `pnpm bench --only mcp` (`mcp-source.ts`): per MCP server its floor
 * and toolwire arms, the ceiling once, and per server the series bound of its c = 8 ratio.
 */
import { type McpArm, type McpCpu, median } from './mcp-drive.js';
import type { McpPair, McpResult } from './mcp-source.js';

/** The fake's label: it does no work per call, so its floor is the fastest and toolwire's ratio the lowest. */
export const FAKE_LABEL = 'zero-work fake';
export const FS_LABEL = 'server-filesystem';

const cpuOf = (c: McpCpu): string => `${Math.round(c.bench)}${c.host === undefined ? '' : ` + ${Math.round(c.host)}`} + ${Math.round(c.mcp)}`;

function pairLine(label: string, p: McpPair): string {
  return (
    `${label}: floor ${Math.round(p.floor.c1PerSec)} / ${Math.round(p.floor.c8PerSec)} calls/s (c1 / c8), p50 ${Math.round(p.floor.p50Us)} µs, CPU µs/call c8 ${cpuOf(p.floor.cpuC8)}; ` +
    `toolwire ${Math.round(p.toolwire.c1PerSec)} / ${Math.round(p.toolwire.c8PerSec)} calls/s, p50 ${Math.round(p.toolwire.p50Us)} µs, CPU µs/call c8 ${cpuOf(p.toolwire.cpuC8)}; ` +
    (p.seriesC8Bound === undefined || p.seriesC8Ratio === undefined
      ? ''
      : `floor and ceiling in series allow c8 ${p.seriesC8Bound.toFixed(2)} × floor, toolwire reaches ${p.seriesC8Ratio.toFixed(2)} × that; `) +
    `c8 ratio ${p.c8Ratio.toFixed(2)} (target ≥ 0.7), p50 budget ${p.p50Budget.toFixed(2)} (target ≤ 1)`
  );
}

/** One line for the log of a run. */
export function mcpLine(r: McpResult): string {
  return [
    pairLine(FAKE_LABEL, r),
    ...(r.ceiling === undefined
      ? []
      : [
          `ceiling (host, in-process echo) ${Math.round(r.ceiling.c1PerSec)} / ${Math.round(r.ceiling.c8PerSec)} calls/s, CPU µs/call c8 ${Math.round(r.ceiling.cpuC8.bench)} + ${Math.round(r.ceiling.cpuC8.host ?? 0)}, c8 ${(r.ceilingC8Ratio ?? 0).toFixed(2)} × the fake's floor`,
        ]),
    ...(r.filesystem === undefined ? [] : [pairLine(`${FS_LABEL} ${r.filesystem.tool}`, r.filesystem)]),
  ].join('; ');
}

/** The scenario's table (medians over runs). */
export function renderMcp(results: McpResult[], table: (header: string[], body: string[][]) => string): string {
  const med = (pick: (r: McpResult) => number): string => Math.round(median(results.map(pick))).toLocaleString('en-US');
  const cpu = (pick: (r: McpResult) => McpCpu, mcp = true): string => {
    const host = results[0] === undefined ? undefined : pick(results[0]).host;
    return `${med((r) => pick(r).bench)} / ${host === undefined ? '—' : med((r) => pick(r).host!)} / ${mcp ? med((r) => pick(r).mcp) : '—'}`;
  };
  const row = (name: string, arm: (r: McpResult) => McpArm, mcp = true): string[] => [
    name,
    `${med((r) => arm(r).c1PerSec)} / ${med((r) => arm(r).c8PerSec)}`,
    `${med((r) => arm(r).p50Us)} / ${med((r) => arm(r).p50c8Us)}`,
    cpu((r) => arm(r).cpuC1, mcp),
    cpu((r) => arm(r).cpuC8, mcp),
  ];
  const all = (has: (r: McpResult) => unknown): boolean => results.length > 0 && results.every((r) => has(r) !== undefined);
  const withFs = all((r) => r.filesystem);
  const rows = [
    row(`${FAKE_LABEL}: MCP SDK client → MCP server (floor)`, (r) => r.floor),
    row(`${FAKE_LABEL}: toolwire server → host → MCP server`, (r) => r.toolwire),
  ];
  if (withFs)
    rows.push(
      row(`${FS_LABEL}: MCP SDK client → MCP server (floor)`, (r) => r.filesystem!.floor),
      row(`${FS_LABEL}: toolwire server → host → MCP server`, (r) => r.filesystem!.toolwire),
    );
  if (all((r) => r.ceiling)) rows.push(row('ceiling: toolwire server → host, in-process echo (no MCP)', (r) => r.ceiling!, false));
  const fixed = (pick: (r: McpResult) => number): string => median(results.map(pick)).toFixed(2);
  const series = (label: string, pair: (r: McpResult) => McpPair): string[] =>
    all((r) => pair(r).seriesC8Bound) && all((r) => pair(r).seriesC8Ratio)
      ? [
          `${label}: floor and ceiling in series (c8 latencies add: 1 / (1 / floor + 1 / ceiling)) allow c8 ${fixed((r) => pair(r).seriesC8Bound!)} × floor; ` +
            `toolwire c8 ÷ that: ${fixed((r) => pair(r).seriesC8Ratio!)}`,
        ]
      : [];
  const fs = results[0]?.filesystem;
  return [
    `MCP server as a tool source (issue 14; ${results[0]?.rounds ?? 0} rounds × ${(results[0]?.calls ?? 0).toLocaleString('en-US')} calls per concurrency, median of ${results.length} run${results.length === 1 ? '' : 's'}; CPU of this process / the tool host / the MCP server):`,
    `the ${FAKE_LABEL}'s \`echo\` does no work, so its floor is the fastest MCP exchange there is (toolwire's worst case)` +
      (withFs && fs !== undefined
        ? `; ${FS_LABEL} is ${fs.server}, \`${fs.tool}\` of a ${fs.fileBytes} B file (result with structuredContent), ${fs.calls.toLocaleString('en-US')} calls per concurrency`
        : ''),
    table(['arm', 'calls/s c1 / c8', 'p50 µs c1 / c8', 'CPU µs/call c1', 'CPU µs/call c8'], rows),
    ...(all((r) => r.ceilingC8Ratio) ? [`ceiling c8 ÷ the ${FAKE_LABEL}'s floor c8 (median of the rounds' ratios): ${fixed((r) => r.ceilingC8Ratio!)}`] : []),
    ...series(FAKE_LABEL, (r) => r),
    ...(withFs ? series(FS_LABEL, (r) => r.filesystem!) : []),
  ].join('\n');
}
