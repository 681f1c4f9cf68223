/**
 * Bench baseline of the door arms, server role: the MCP SDK's own Streamable HTTP server on
 * `node:http` (127.0.0.1:0, `/mcp`), of the SDK line the door uses (v2: `@modelcontextprotocol/server`
 * + `@modelcontextprotocol/node`, the same versions), stateful (one SDK `Server` +
 * `NodeStreamableHTTPServerTransport` per session, session id a random UUID — what the toolwire door
 * does; SSE answers unless `BENCH_SDK_JSON=1`, as the door's), with the tool in-process:
 * `h0__echo` lists with the same `inputSchema` and `outputSchema` as through toolwire and answers
 * the same result shape (envelope text, `structuredContent` `{stdout, stderr, exitCode}`). No
 * authentication, no executor, no remote host: the floor a door can be measured against.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { Server } from '@modelcontextprotocol/server';
import { OUTPUT_SCHEMA } from '../../packages/server/src/mcp/tool-result.js';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';

const TOOL = { name: 'h0__echo', description: 'stdout = the input JSON', inputSchema: { type: 'object' as const }, outputSchema: OUTPUT_SCHEMA };
const transports = new Map<string, NodeStreamableHTTPServerTransport>();

function newServer(): Server {
  const server = new Server({ name: 'sdk-baseline', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler('tools/list', () => ({ tools: [TOOL] }));
  server.setRequestHandler('tools/call', (request) => {
    const stdout = JSON.stringify(request.params.arguments ?? {});
    return {
      content: [{ type: 'text', text: `Exit code: 0\n${stdout}` }],
      isError: false,
      structuredContent: { stdout, stderr: '', exitCode: 0 },
    };
  });
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if ((req.url ?? '').split('?', 1)[0] !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const id = req.headers['mcp-session-id'];
  if (typeof id === 'string') {
    const transport = transports.get(id);
    if (transport === undefined) {
      res.writeHead(404).end();
      return;
    }
    await transport.handleRequest(req, res);
    return;
  }
  const server = newServer();
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: process.env.BENCH_SDK_JSON === '1',
    onsessioninitialized: (sessionId) => void transports.set(sessionId, transport),
    onsessionclosed: (sessionId) => void transports.delete(sessionId),
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    console.error('sdk baseline:', error);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
const { port } = http.address() as AddressInfo;

serve((command) => {
  switch (command.cmd) {
    case 'rss':
      return { rssKiB: settledRssKiB() };
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready', mcpUrl: `http://127.0.0.1:${port}/mcp` });
