/**
 * A minimal MCP door for CLI tests: an SDK low-level `Server` over stateful Streamable HTTP on
 * 127.0.0.1 port 0, bearer-token checked, with scripted tools/list and tools/call answers.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type CallToolResult, CallToolRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';

export interface RecordedCall {
  name: string;
  arguments: unknown;
  meta: Record<string, unknown> | undefined;
  signal: AbortSignal;
}

/** One HTTP request the door received: its method and, for a POST, the JSON-RPC method(s) in its body. */
export interface RecordedRequest {
  http: string;
  rpc: string[];
}

export type CallAnswer = (call: RecordedCall) => Promise<CallToolResult> | CallToolResult;

export class FakeDoor {
  readonly calls: RecordedCall[] = [];
  /** Every HTTP request to /mcp with a valid token, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** tools/list requests answered. */
  listed = 0;
  readonly #transports = new Map<string, StreamableHTTPServerTransport>();
  readonly #servers: Server[] = [];
  answer: CallAnswer = () => ({ content: [{ type: 'text', text: 'Exit code: 0\n' }], structuredContent: { stdout: '', stderr: '', exitCode: 0 } });
  /** Answers tools/list; default: {@link FakeDoor.tools}. */
  list: () => Promise<Tool[]> | Tool[] = () => this.tools;

  private constructor(
    readonly http: HttpServer,
    readonly token: string,
    readonly tools: Tool[],
  ) {}

  static async start(token: string, tools: Tool[]): Promise<FakeDoor> {
    let door!: FakeDoor;
    const http = createServer((req, res) => {
      void door.#handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    door = new FakeDoor(http, token, tools);
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    return door;
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  /** MCP sessions initialized and not yet closed (a DELETE closes one). */
  get openSessions(): number {
    return this.#transports.size;
  }

  /** Close every MCP session on the server side (their open response streams end without an answer). */
  async closeSessions(): Promise<void> {
    for (const s of this.#servers) await s.close().catch(() => {});
  }

  async close(): Promise<void> {
    for (const s of this.#servers) await s.close().catch(() => {});
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  async #handle(
    req: Parameters<StreamableHTTPServerTransport['handleRequest']>[0],
    res: Parameters<StreamableHTTPServerTransport['handleRequest']>[1],
  ): Promise<void> {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    let body: unknown;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    }
    const messages = (Array.isArray(body) ? body : body === undefined ? [] : [body]) as { method?: string }[];
    this.requests.push({ http: req.method ?? '', rpc: messages.map((m) => m.method ?? '(response)') });
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? this.#transports.get(sid) : undefined;
    if (!transport) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void this.#transports.set(id, created),
        onsessionclosed: (id) => void this.#transports.delete(id),
      });
      transport = created;
      const server = new Server({ name: 'fake-door', version: '0.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => {
        this.listed++;
        return { tools: await this.list() };
      });
      server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const call: RecordedCall = { name: request.params.name, arguments: request.params.arguments, meta: request.params._meta, signal: extra.signal };
        this.calls.push(call);
        return this.answer(call);
      });
      this.#servers.push(server);
      await server.connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }
}
