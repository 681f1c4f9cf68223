/**
 * One MCP session's transport as the door uses it: the SDK's `StreamableHTTPServerTransport` (SSE
 * answers, the GET notification stream, DELETE, initialization) plus a direct path for the POSTs
 * that need no stream. A POST carrying one JSON-RPC request with no `_meta.progressToken` and no
 * `_meta["toolwire/stream"]` is answered with one JSON body (`application/json`), written once when
 * the answer is ready: as an SSE stream the headers went out at once and the event later — two
 * writes and two client wake-ups per call — and the SDK transport also converts every request and
 * response to Web `Request`/`Response` objects (bench/README.md, "MCP door"). Everything else (a
 * batch, a notification, a request that asks for progress or output, a header the SDK would refuse)
 * goes to the SDK transport unchanged, with the body already read.
 *
 * Only SDK types are imported here (erased at run time): the SDK is loaded by the door (`sdk.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { STREAM_META } from './live-output.js';

/** A POST body read by the door: parsed JSON, or why not. */
export type PostBody = { ok: true; value: unknown } | { ok: false; status: 400 | 413; code: number; message: string };

/** Whether the SDK transport would accept these POST headers as they are (else it answers them itself). */
export function plainPostHeaders(req: IncomingMessage, protocolVersions: readonly string[]): boolean {
  const accept = req.headers.accept;
  const type = req.headers['content-type'];
  const version = req.headers['mcp-protocol-version'];
  return (
    typeof accept === 'string' &&
    accept.includes('application/json') &&
    accept.includes('text/event-stream') &&
    typeof type === 'string' &&
    type.includes('application/json') &&
    typeof version === 'string' &&
    protocolVersions.includes(version)
  );
}

/**
 * Read and parse a POST body of at most `maxBytes` bytes. A declared or actual size over it → 413
 * (the rest is not read), not JSON → 400 `-32700`, with the SDK transport's messages; a request that
 * fails or is aborted while it is read → `undefined`.
 */
export function readPostBody(req: IncomingMessage, maxBytes: number): Promise<PostBody | undefined> {
  const tooLarge = { ok: false, status: 413, code: -32000, message: `Payload Too Large: Request body must not exceed ${maxBytes} bytes` } as const;
  if (Number(req.headers['content-length']) > maxBytes) return Promise.resolve(tooLarge);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const done = (body: PostBody | undefined): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('aborted', onGone);
      resolve(body);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received <= maxBytes) chunks.push(chunk);
      else {
        req.pause(); // the answer closes the connection; the rest is never read
        done(tooLarge);
      }
    };
    const onEnd = (): void => {
      try {
        const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
        done({ ok: true, value: JSON.parse(text) as unknown });
      } catch {
        done({ ok: false, status: 400, code: -32700, message: 'Parse error: Invalid JSON' });
      }
    };
    const onGone = (): void => done(undefined);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('aborted', onGone);
  });
}

interface PlainRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Record<string, unknown>;
}

/** `body` as one JSON-RPC request (not `initialize`) that asks for no progress and no output; else `undefined`. */
export function plainRequest(body: unknown): PlainRequest | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const m = body as Partial<PlainRequest>;
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' || m.method === 'initialize') return undefined;
  if (typeof m.id !== 'string' && !(typeof m.id === 'number' && Number.isInteger(m.id))) return undefined;
  if (m.params === undefined) return m as PlainRequest;
  if (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params)) return undefined;
  const meta = m.params._meta;
  if (meta === undefined) return m as PlainRequest;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const keys = meta as Record<string, unknown>;
  return keys.progressToken === undefined && keys[STREAM_META] === undefined ? (m as PlainRequest) : undefined;
}

/**
 * The transport the session's SDK `Server` is connected to: the SDK transport, except that answers to
 * requests taken by {@link DoorTransport.answerJson} are written as one JSON body.
 */
export class DoorTransport implements Transport {
  readonly http: StreamableHTTPServerTransport;
  /** Open JSON answers by request id. */
  readonly #json = new Map<RequestId, ServerResponse>();
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];

  constructor(http: StreamableHTTPServerTransport) {
    this.http = http;
  }

  get sessionId(): string | undefined {
    return this.http.sessionId;
  }

  async start(): Promise<void> {
    this.http.onmessage = (message, extra) => this.onmessage?.(message, extra);
    this.http.onclose = () => this.onclose?.();
    this.http.onerror = (error) => this.onerror?.(error);
    await this.http.start();
  }

  async close(): Promise<void> {
    const open = [...this.#json.values()];
    this.#json.clear();
    for (const res of open) res.destroy();
    await this.http.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const answer = 'id' in message && !('method' in message) ? message.id : undefined;
    const related = answer ?? options?.relatedRequestId;
    const res = related === undefined ? undefined : this.#json.get(related);
    if (res === undefined) return this.http.send(message, options);
    if (answer === undefined) return; // a notification about a request that asked for none (no stream to put it on)
    this.#json.delete(answer);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    res.writeHead(200, headers);
    res.end(JSON.stringify(message));
  }

  /**
   * Hand `request` (from {@link plainRequest}) to the session's server; its answer is written to `res`
   * as one JSON body. A second request with an id still open is refused (HTTP 409, as the id would be
   * ambiguous). A response closed before the answer forgets the request (the answer is dropped).
   */
  answerJson(request: PlainRequest, req: IncomingMessage, res: ServerResponse, authInfo: AuthInfo): void {
    const id = request.id;
    if (this.#json.has(id)) {
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: request id already in flight' }, id: null }));
      return;
    }
    this.#json.set(id, res);
    res.once('close', () => {
      if (this.#json.get(id) === res) this.#json.delete(id);
    });
    this.onmessage?.(request, { authInfo, requestInfo: { headers: req.headers } });
  }
}
