/**
 * The stdio door's side toward the server (`stdio-bridge.ts`): the door's session through an SDK
 * `Client` on `StreamableHTTPClientTransport`, opened again when the door has lost it (HTTP 404), with
 * the arguments of a call forwarded as they were written when needed, and every request answered at
 * once with an error when its answer stream breaks or ends without the answer (`answer-watch.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ErrorCode, ResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import pTimeout from 'p-timeout';
import { VERSION } from '../version.js';
import { type AnswerStreamEnd, watchingAnswers } from './answer-watch.js';

/** Time allowed at the end for the door's session to be ended (DELETE), ms. */
const CLOSE_TIMEOUT_MS = 2_000;

/** Options of `StdioBridge.start`. */
export interface BridgeOptions {
  /** The door, e.g. `http://127.0.0.1:7700/mcp`. */
  url: URL;
  /** Caller token (never logged). */
  token: string;
  /** Time allowed to open the door's session, ms. */
  connectTimeoutMs: number;
  stdin: Readable;
  stdout: Writable;
  /** Where one-line notes go (stderr: MCP clients show it as the server's log). */
  log: (line: string) => void;
}

/** The door's session, opened again when the door has lost it. */
export class Upstream {
  readonly #options: BridgeOptions;
  readonly #onListChanged: () => void;
  #client: Promise<Client> | undefined;
  /** Arguments to send as text: marker key → the text (see {@link Upstream.asSent}). */
  readonly #asSent = new Map<string, string>();

  constructor(options: BridgeOptions, onListChanged: () => void) {
    this.#options = options;
    this.#onListChanged = onListChanged;
  }

  /** The open session's client, opening one when there is none. Rejects as `Client.connect` does. */
  client(): Promise<Client> {
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  async #connect(): Promise<Client> {
    const { url, token, connectTimeoutMs } = this.#options;
    // A request whose answer stream ends without its answer is answered here with an error at once.
    const unanswered = ({ id, error }: AnswerStreamEnd): void => {
      const why =
        error === undefined
          ? 'the server ended the answer stream of the request without its answer'
          : `lost the server ${url.href} during the request (${error.message})`;
      transport.onmessage?.({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: `toolwire mcp: ${why}` } });
    };
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: watchingAnswers((input, init) => fetch(input, this.#withText(init)), unanswered),
    });
    const client = new Client({ name: 'toolwire-mcp', version: VERSION }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#onListChanged());
    // A dropped notification stream is re-opened by the transport; an error answered by `unanswered` for a
    // request already answered is "a response for an unknown message ID".
    client.onerror = () => {};
    try {
      await client.connect(transport, { timeout: connectTimeoutMs });
    } catch (error) {
      await client.close();
      throw error;
    }
    return client;
  }

  /**
   * Send `method` with `params` (as given) and resolve with the door's result. A lost session (404)
   * is opened again and the request sent once more; `reopened` is told.
   */
  async request(method: string, params: Record<string, unknown> | undefined, options: RequestOptions, reopened: () => void): Promise<unknown> {
    const client = await this.client();
    const message = { method, ...(params !== undefined && { params }) };
    try {
      return await client.request(message, ResultSchema, options);
    } catch (error) {
      if (!(error instanceof StreamableHTTPError && error.code === 404) || options.signal?.aborted) throw error;
      this.#options.log('toolwire mcp: the server no longer knows this session; opening a new one');
      if ((await this.#client) === client) this.#client = undefined;
      void client.close();
      const again = await this.client();
      reopened();
      return again.request(message, ResultSchema, options);
    }
  }

  /**
   * Arguments that stand for `text` in a request: its body carries `text` itself in their place
   * until `release` is called.
   */
  asSent(text: string): { placeholder: Record<string, number>; release: () => void } {
    const key = `toolwire/arguments-as-sent/${randomUUID()}`;
    this.#asSent.set(key, text);
    return { placeholder: { [key]: 0 }, release: () => this.#asSent.delete(key) };
  }

  #withText(init: RequestInit | undefined): RequestInit | undefined {
    if (this.#asSent.size === 0 || typeof init?.body !== 'string') return init;
    let body = init.body;
    for (const [key, text] of this.#asSent) body = body.replace(`{${JSON.stringify(key)}:0}`, () => text);
    return { ...init, body };
  }

  /** End the session (DELETE, bounded) and close the client. */
  async close(): Promise<void> {
    const pending = this.#client;
    this.#client = undefined;
    const client = await pending?.catch(() => undefined);
    if (client === undefined) return;
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    await pTimeout(transport?.terminateSession() ?? Promise.resolve(), { milliseconds: CLOSE_TIMEOUT_MS, message: false }).catch(() => {});
    await client.close();
  }
}
