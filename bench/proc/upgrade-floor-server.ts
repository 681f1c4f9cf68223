/**
 * Bench floor of a failed upgrade, server role: a bare `node:http` server on 127.0.0.1:0 that answers
 * every WebSocket upgrade `401` (with `WWW-Authenticate: Bearer`, as toolwire does) and closes the
 * socket — what accepting, parsing and refusing one connection costs Node itself, with no
 * authentication, limiter or logging. The `ids` scenario sets toolwire's failed-upgrade CPU beside it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';

const RESPONSE = 'HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\nWWW-Authenticate: Bearer\r\n\r\n';
const http = createServer((_req, res) => res.writeHead(404).end());
http.on('upgrade', (_req, socket) => {
  socket.on('error', () => {});
  socket.once('finish', () => socket.destroy());
  socket.end(RESPONSE);
});
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
const { port } = http.address() as AddressInfo;

serve((command) => {
  if (command.cmd === 'info') return processInfo();
  if (command.cmd === 'rss') return { rssKiB: settledRssKiB() }; // after a full GC, as toolwire-server's
  throw new Error(`unknown command ${command.cmd}`);
});
send({ event: 'ready', url: `ws://127.0.0.1:${port}`, mcpUrl: `http://127.0.0.1:${port}/mcp` });
