/**
 * Bench baseline, tool-host role: plain `ws` client; answers `{id, input}` with
 * `{id, stdout: JSON.stringify(input), exitCode: 0}` — the same work as toolwire's `echo` tool.
 */
import { WebSocket } from 'ws';
import { processInfo, send, serve } from './ipc.js';

const ws = new WebSocket(process.env.BENCH_URL!, { perMessageDeflate: false });
ws.on('error', (error) => {
  console.error('raw host:', error.message);
  process.exit(1);
});
ws.on('message', (data: Buffer) => {
  const call = JSON.parse(data.toString()) as { id: number; input: unknown };
  ws.send(JSON.stringify({ id: call.id, stdout: JSON.stringify(call.input), exitCode: 0 }));
});
await new Promise<void>((resolve) => ws.once('open', resolve));

serve((command) => {
  if (command.cmd === 'info') return processInfo();
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready' });
