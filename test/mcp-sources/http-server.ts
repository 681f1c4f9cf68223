/** A Streamable HTTP MCP server on 127.0.0.1:0 (stateless: a server per request), torn down with the test. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { defer } from '../helpers.js';

const ADD = { name: 'add', title: 'Add', inputSchema: { type: 'object' as const, properties: { a: { type: 'number' }, b: { type: 'number' } } } };

export async function startHttpMcp(): Promise<string> {
  const http = createServer((req, res) => {
    const server = new Server({ name: 'web', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [ADD] }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const { a, b } = request.params.arguments as { a: number; b: number };
      return { content: [{ type: 'text', text: String(a + b) }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise<void>((resolve) => http.close(() => resolve())));
  defer(() => http.closeAllConnections());
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}
