/**
 * Bench baseline, server role: plain `ws` on 127.0.0.1:0, minimal JSON frames. A call is
 * `{id, input}` → `{id, stdout, exitCode}`, with a Map of pending calls. The load runs here.
 */
import { type WebSocket, WebSocketServer } from 'ws';
import { makeInput, runSegment } from '../load.js';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';

interface Reply {
  id: number;
  stdout: string;
  exitCode: number;
}

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, clientTracking: false });
await new Promise<void>((resolve) => wss.once('listening', resolve));
const pending = new Map<number, (reply: Reply) => void>();
let socket: WebSocket | undefined;
let nextId = 0;

wss.on('connection', (ws) => {
  socket = ws;
  ws.on('error', () => {});
  ws.on('message', (data: Buffer) => {
    const reply = JSON.parse(data.toString()) as Reply;
    const resolve = pending.get(reply.id);
    if (resolve === undefined) return;
    pending.delete(reply.id);
    resolve(reply);
  });
});

function call(input: unknown): Promise<Reply> {
  const id = ++nextId;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    socket!.send(JSON.stringify({ id, input }));
  });
}

serve(async (command) => {
  switch (command.cmd) {
    case 'wait': {
      const until = Date.now() + 60_000;
      while (socket === undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      if (socket === undefined) throw new Error('no host connected');
      return {};
    }
    case 'load': {
      const input = makeInput(Number(command.bytes));
      const expected = JSON.stringify(input).length;
      const segment = await runSegment(
        Number(command.concurrency),
        Number(command.count),
        async () => {
          const reply = await call(input);
          return reply.exitCode === 0 && reply.stdout.length === expected ? undefined : `exit ${reply.exitCode}`;
        },
        command.gc !== false,
      );
      return { segment };
    }
    case 'rss':
      return { rssKiB: settledRssKiB() };
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
const address = wss.address();
send({ event: 'ready', url: `ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}` });
