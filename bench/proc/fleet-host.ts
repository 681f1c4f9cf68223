/**
 * Bench helper for s6's fleet: `BENCH_COUNT` hosts (identities `BENCH_FIRST` … `BENCH_FIRST +
 * BENCH_COUNT − 1`) in this process, each one `ws` connection that speaks the host side of the
 * protocol as far as a connected, idle host does: the upgrade (bearer token, toolwire subprotocols),
 * `hello`, then on `welcome` the `advertise` frame of the same 10 tools `toolwire-host.ts` registers
 * (built once by the client's own `ToolSet`, so the server sees the frames a `ToolHost` sends), and
 * pongs to the server's pings (`ws` answers them). It runs no tools: s6 calls only the echo host.
 *
 * Why not `ToolHost`s: s6 measures the server. 19,000 `ToolHost`s in 4 processes used as much CPU
 * as the server did while they connected (each keeps its own tool set, call session, admission,
 * supervisor and timers), on a 2-vCPU machine where the server needs one CPU to itself: the load
 * generator, not the server, set the connect time. `BENCH_S6_REAL_HOSTS=1` keeps `ToolHost`s.
 *
 * Commands: `connect` (dial every host, `BATCH` in flight, resolve when all have their `advertised`),
 * `info` (CPU, RSS, hosts, and `lost`: connections closed after they were advertised).
 */
import { encodeMessage, type HelloMessage, PROTOCOL_VERSION, SUBPROTOCOLS, versionOfSubprotocol } from '@toolwire/protocol';
import { WebSocket } from 'ws';
import { ToolSet } from '../../packages/client/src/host/tool-set.js';
import { SOFTWARE } from '../../packages/client/src/version.js';
import { processInfo, send, serve } from './ipc.js';
import { FILLERS, fillerSchema, hostToken } from './tools.js';

const server = process.env.BENCH_URL!;
const first = Number(process.env.BENCH_FIRST ?? 0);
const count = Number(process.env.BENCH_COUNT ?? 1);
/**
 * The local address this process dials from (each fleet process its own 127.0.0.x). From one address,
 * the kernel picks each dial's ephemeral port by walking the ports of one parity (14,116 of the
 * default 32768–60999) before the other: past ~14,000 connections every dial walked all of them, in
 * the host processes' system time, and the second wave's connects slowed down.
 */
const localAddress = process.env.BENCH_SOURCE_ADDRESS;
/** Dials in flight at once (as `toolwire-host.ts`). */
const BATCH = 50;
/** Bound on one host's dial → `advertised`, ms. */
const DIAL_TIMEOUT_MS = 120_000;

/** The advertise frame of `toolwire-host.ts`'s tool set (echo, cat, 8 fillers), as a `ToolHost` encodes it. */
function advertiseFrame(): string {
  const object = { type: 'object' } as const;
  const tools = new ToolSet();
  tools.addHandler('echo', { description: 'stdout = the input JSON', inputSchema: object }, (input) => JSON.stringify(input));
  tools.addCommand('cat', { description: 'stdout = stdin', inputSchema: object, command: ['cat'] });
  for (let k = 0; k < FILLERS; k++) tools.addHandler(`tool${k}`, { description: `filler tool ${k}`, inputSchema: fillerSchema(k) }, () => '');
  return encodeMessage({ type: 'advertise', tools: tools.specs() });
}

const ADVERTISE = advertiseFrame();
const hello: HelloMessage = { type: 'hello', protocol: PROTOCOL_VERSION, software: SOFTWARE };

const sockets: WebSocket[] = [];
let lost = 0;

/** Dial host `i`; resolves at its `advertised`, rejects on a close or error before it. */
function dial(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(server, [...SUBPROTOCOLS], { headers: { authorization: `Bearer ${hostToken(i)}` }, ...(localAddress && { localAddress }) });
    sockets.push(ws);
    let advertised = false;
    const timer = setTimeout(() => ws.terminate(), DIAL_TIMEOUT_MS);
    ws.on('error', () => {}); // the close that follows settles the dial
    ws.on('open', () => ws.send(encodeMessage({ ...hello, protocol: versionOfSubprotocol(ws.protocol) ?? 1 })));
    ws.on('message', (data) => {
      if (advertised) return;
      const type = (JSON.parse((data as Buffer).toString()) as { type?: string }).type; // a text frame: one Buffer
      if (type === 'welcome') ws.send(ADVERTISE);
      else if (type === 'advertised') {
        advertised = true;
        clearTimeout(timer);
        resolve();
      }
    });
    ws.on('close', (code, reason) => {
      clearTimeout(timer);
      if (advertised) lost++;
      else reject(new Error(`host ${i}: closed ${code} ${String(reason)} before advertised`));
    });
  });
}

async function connectAll(): Promise<void> {
  let next = first;
  const end = first + count;
  const worker = async (): Promise<void> => {
    while (next < end) await dial(next++);
  };
  await Promise.all(Array.from({ length: Math.min(BATCH, count) }, worker));
}

serve(async (command) => {
  if (command.cmd === 'info') return { ...processInfo(), hosts: sockets.length, lost };
  if (command.cmd === 'connect') {
    await connectAll();
    return { hosts: sockets.length };
  }
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready', hosts: 0 });
