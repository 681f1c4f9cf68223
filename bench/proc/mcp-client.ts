/**
 * Bench helper: the load of the door arms — MCP SDK clients (`Client` + `StreamableHTTPClientTransport`,
 * one session per load worker, as each concurrent agent would have its own) calling `BENCH_TOOL` at
 * `BENCH_MCP_URL` with `Authorization: Bearer BENCH_MCP_TOKEN` (when set). Each client lists the
 * tools once after connecting, as an agent does (the SDK client then checks every result's
 * `structuredContent` against the tool's `outputSchema`). Also throws failed upgrades at a toolwire
 * server (`badUpgrades`).
 */
import { connect } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeInput, runSegment } from '../load.js';
import { processInfo, send, serve } from './ipc.js';

const url = new URL(process.env.BENCH_MCP_URL!);
const token = process.env.BENCH_MCP_TOKEN;
const tool = process.env.BENCH_TOOL ?? 'h0__echo';
const clients: Client[] = [];

/**
 * The transport passes one long-lived abort signal to every `fetch`; undici adds a listener to it
 * per request and drops it only when the request is collected, so past 1,500 requests every
 * request also built a MaxListenersExceededWarning (stack and all) — client CPU that is neither
 * arm's. The bench never aborts a request: the signal is left out, in both door arms alike.
 */
const fetchWithoutSignal: typeof fetch = (input, init) => {
  if (init?.signal == null) return fetch(input, init);
  const rest = { ...init };
  delete rest.signal;
  return fetch(input, rest);
};

async function client(worker: number): Promise<Client> {
  while (clients.length <= worker) {
    const c = new Client({ name: 'toolwire-bench', version: '1.0.0' });
    const requestInit = token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } };
    await c.connect(new StreamableHTTPClientTransport(url, { ...requestInit, fetch: fetchWithoutSignal }));
    const { tools } = await c.listTools();
    if (!tools.some((t) => t.name === tool)) throw new Error(`${tool} is not listed at ${url.href}`);
    clients.push(c);
  }
  return clients[worker]!;
}

/** `count` upgrades with a token nobody has to `target`, `concurrency` at a time; each waits for the server to close. */
async function badUpgrades(count: number, concurrency: number, target: URL): Promise<{ statuses: Record<string, number> }> {
  const statuses: Record<string, number> = {};
  let next = 0;
  const request =
    `GET / HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: toolwire.v1\r\nAuthorization: Bearer not-a-configured-token-0123456789\r\n\r\n`;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const socket = connect(Number(target.port), target.hostname, () => socket.end(request));
      let head = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (head += chunk));
      socket.on('error', () => {});
      socket.on('close', () => {
        const status = head.slice(9, 12) || 'none';
        statuses[status] = (statuses[status] ?? 0) + 1;
        resolve();
      });
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        await one();
      }
    }),
  );
  return { statuses };
}

serve(async (command) => {
  switch (command.cmd) {
    case 'load': {
      const concurrency = Number(command.concurrency);
      for (let w = 0; w < concurrency; w++) await client(w);
      const input = makeInput(Number(command.bytes));
      const expected = JSON.stringify(input).length;
      const segment = await runSegment(
        concurrency,
        Number(command.count),
        async (_, worker) => {
          const result = await clients[worker]!.callTool({ name: tool, arguments: input });
          const s = result.structuredContent as { stdout?: string; exitCode?: number } | undefined;
          if (result.isError || s?.exitCode !== 0 || s.stdout?.length !== expected) return `unexpected result ${JSON.stringify(result).slice(0, 200)}`;
          return undefined;
        },
        command.gc !== false,
      );
      return { segment };
    }
    case 'badUpgrades':
      return badUpgrades(Number(command.count), Number(command.concurrency ?? 8), typeof command.url === 'string' ? new URL(command.url) : url);
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready' });
