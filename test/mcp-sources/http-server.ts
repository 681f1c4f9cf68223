/** A Streamable HTTP MCP server on 127.0.0.1 (stateless: a server per request), torn down with the test. */
import { type Server as HttpServer, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { defer } from '../helpers.js';

const ADD = { name: 'add', title: 'Add', inputSchema: { type: 'object' as const, properties: { a: { type: 'number' }, b: { type: 'number' } } } };
/** Never answers (its request stays open until the client or the server goes away). */
const SLOW = { name: 'slow', inputSchema: { type: 'object' as const } };
/** Its call's answer stream is opened and ended without the answer (the server lives on). */
const DROP = { name: 'drop', inputSchema: { type: 'object' as const } };
/** Answers 8 MiB of text in one message. */
const HUGE = { name: 'huge', inputSchema: { type: 'object' as const } };

/** A running HTTP MCP server: its URL, and `stop()`, which closes it and drops every open connection at once. */
export interface HttpMcp {
  url: string;
  /** Calls of `slow` it has received. */
  slowCalls: () => number;
  stop: () => Promise<void>;
}

/** Start the server on `port` (0: any free port). */
export async function startHttpMcpServer(port = 0): Promise<HttpMcp> {
  let slowCalls = 0;
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let body: unknown;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const call = body as { method?: string; params?: { name?: string } };
      if (call.method === 'tools/call' && call.params?.name === 'drop') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end();
        return;
      }
    }
    const server = new Server({ name: 'web', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [ADD, SLOW, DROP, HUGE] }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      if (request.params.name === 'slow') {
        slowCalls++;
        await new Promise(() => {});
      }
      if (request.params.name === 'huge') return { content: [{ type: 'text', text: 'x'.repeat(8 * 1024 * 1024) }] };
      const { a, b } = request.params.arguments as { a: number; b: number };
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
  const http: HttpServer = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy()); // a request cut off mid-body (the test stops the server)
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= new Promise<void>((resolve) => {
      http.close(() => resolve());
      http.closeAllConnections();
    });
    return stopped;
  };
  defer(stop);
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, slowCalls: () => slowCalls, stop };
}

/** Start the server on port 0; returns its URL. */
export async function startHttpMcp(): Promise<string> {
  return (await startHttpMcpServer()).url;
}
