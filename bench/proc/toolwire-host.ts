/**
 * Bench helper: `BENCH_COUNT` real `ToolHost`s (default 1) in this process, identities
 * `BENCH_FIRST` … `BENCH_FIRST + BENCH_COUNT − 1`, each advertising 10 tools: `echo` (in-process,
 * stdout = the input JSON), `cat` (subprocess, stdout = stdin = the input JSON) and 8 fillers.
 */
import { ToolHost, type ToolHostOptions } from '@toolwire/client';
import { processInfo, send, serve } from './ipc.js';
import { FILLERS, fillerSchema, hostToken } from './tools.js';

const server = process.env.BENCH_URL!;
const first = Number(process.env.BENCH_FIRST ?? 0);
const count = Number(process.env.BENCH_COUNT ?? 1);
/** Dials in flight at once when starting many hosts. */
const BATCH = 50;
// One logger for every host of this process (the default opens one stderr stream per host).
const warn = (obj: unknown, msg?: string): void => console.error('bench host:', msg ?? '', typeof obj === 'string' ? obj : JSON.stringify(obj));
const logger = { debug() {}, info() {}, warn, error: warn } as unknown as NonNullable<ToolHostOptions['logger']>;
const object = { type: 'object' } as const;

function makeHost(i: number): ToolHost {
  const host = new ToolHost({ server, token: hostToken(i), reconnect: false, logger });
  host.tool('echo', { description: 'stdout = the input JSON', inputSchema: object }, (input) => JSON.stringify(input));
  host.command('cat', { description: 'stdout = stdin', inputSchema: object, command: ['cat'] });
  for (let k = 0; k < FILLERS; k++) {
    host.tool(`tool${k}`, { description: `filler tool ${k}`, inputSchema: fillerSchema(k) }, () => '');
  }
  return host;
}

const hosts: ToolHost[] = [];
for (let start = 0; start < count; start += BATCH) {
  const batch = Array.from({ length: Math.min(BATCH, count - start) }, (_, k) => makeHost(first + start + k));
  hosts.push(...batch);
  await Promise.all(batch.map((h) => h.start()));
}

serve((command) => {
  if (command.cmd === 'info') return { ...processInfo(), hosts: hosts.length };
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready', hosts: hosts.length });
