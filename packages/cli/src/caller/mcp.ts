/**
 * The caller side of the server's MCP door, for `toolwire tools` and `toolwire call`: JSON-RPC over
 * MCP Streamable HTTP with `node:http` (`node:https` for an https URL), a bearer token, bounds on
 * connecting and on waiting, and noticing a lost server (the typed failures are in `errors.ts`,
 * their exit statuses in `failure.ts`, the door's URL in `url.ts`, bounded bodies in `http-text.ts`, reading JSON-RPC messages in
 * `rpc.ts`; a request's notifications, e.g. live output, go to its `onNotification`). It speaks only
 * what the two commands need, so a run loads no MCP SDK and no schema library.
 *
 * On the wire, per command:
 * 1. `POST initialize` — the answer comes in an SSE stream (or as JSON), the session id in the
 *    `Mcp-Session-Id` header;
 * 2. `POST notifications/initialized` and `POST <the request>` at the same time (the spec asks only
 *    that requests wait for the initialize answer; the notification is answered 202);
 * 3. on Ctrl-C or a bound reached, `POST notifications/cancelled` for the request;
 * 4. `DELETE` of the session, so none is left open on the server.
 * Every later request carries `Mcp-Session-Id` and `Mcp-Protocol-Version`.
 */
import type { Agent, ClientRequest, RequestOptions } from 'node:http';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { createParser } from 'eventsource-parser';
import pTimeout from 'p-timeout';
import { HttpStatusError, NoAnswerError, RpcError, ServerLostError } from './errors.js';
import { asError, describe, readText } from './http-text.js';
import { type RpcMessage, answerOf, errorDetail, notificationsOf, parseJson, resultOf } from './rpc.js';
import { VERSION } from '../version.js';

export type { RpcMessage } from './rpc.js';

/** Default time allowed to connect and initialize (and, for `toolwire tools`, each list request), ms. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Time allowed for the session's DELETE at the end, ms (a server that does not answer keeps its session). */
const CLOSE_TIMEOUT_MS = 1_000;
/** The MCP version asked for in `initialize`, then the older ones this caller also speaks. */
const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

type RequestId = number;

/** Options of {@link connectMcp}. */
export interface ConnectOptions {
  /** Aborts the connect (Ctrl-C). */
  signal?: AbortSignal;
  /** Time allowed to connect and initialize, ms; default {@link DEFAULT_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
}

/** Options of {@link McpSession.request}. */
export interface RequestBound {
  /** Time allowed for the answer, ms; past it the request is cancelled and rejects with a {@link NoAnswerError}. */
  timeoutMs: number;
  /** How `timeoutMs` was made up, for the error message. */
  bound: string;
  /** Aborts the request (Ctrl-C): it is cancelled on the server and rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Called with each notification the server sends on the request's response stream (e.g. live
   * output), in order. A returned promise pauses reading the response until it settles (backpressure).
   */
  onNotification?: (notification: RpcMessage) => Promise<void> | undefined;
  /**
   * Winds the request down (the reader of its output went away): it is cancelled on the server
   * (`notifications/cancelled`, awaited at most {@link CLOSE_TIMEOUT_MS}), then the session is ended
   * (DELETE), which ends the response stream, and the response is read until then. So the request
   * still resolves with the answer when the server had answered before the cancel reached it (the
   * call had ended), else rejects with a {@link ServerLostError} (no answer: the call was stopped).
   */
  wind?: AbortSignal;
  /**
   * Text that the body carries in place of the JSON of `placeholder` (a string value in `params`):
   * arguments sent as they were written, so the door judges those (README "Connect an agent").
   */
  asSent?: { placeholder: string; text: string };
}

/** What one HTTP exchange with the door gave: the answer to its request (if it carried one) and the response headers. */
interface Exchange {
  answer: RpcMessage | undefined;
  sessionId: string | undefined;
}

/** An open MCP session with the door. Made by {@link connectMcp}; {@link McpSession.close} ends it. */
export class McpSession {
  readonly #url: URL;
  readonly #authorization: string;
  readonly #agent: Agent;
  readonly #request: (url: URL, options: RequestOptions) => ClientRequest;
  /** Notifications still being posted (awaited, within a bound, by `close`). */
  readonly #posting = new Set<Promise<unknown>>();
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #nextId = 0;
  #closed = false;
  /** The session's DELETE, once started ({@link McpSession.#endSession}). */
  #ending: Promise<void> | undefined;

  /** @internal use {@link connectMcp} */
  constructor(url: URL, token: string, http: { Agent: typeof HttpAgent; request: typeof httpRequest }) {
    this.#url = url;
    this.#authorization = `Bearer ${token}`;
    this.#agent = new http.Agent({ keepAlive: true });
    this.#request = http.request;
  }

  /** @internal the `initialize` exchange of {@link connectMcp}. */
  async initialize(signal: AbortSignal): Promise<void> {
    const id = this.#nextId++;
    const params = { protocolVersion: PROTOCOL_VERSIONS[0], capabilities: {}, clientInfo: { name: 'toolwire-cli', version: VERSION } };
    const { answer, sessionId } = await this.#exchange('POST', { jsonrpc: '2.0', id, method: 'initialize', params }, id, signal);
    this.#sessionId = sessionId;
    const version = (resultOf(answer) as { protocolVersion?: unknown } | undefined)?.protocolVersion;
    if (typeof version !== 'string' || !PROTOCOL_VERSIONS.includes(version)) {
      throw new RpcError(undefined, `the server answered initialize with MCP version ${JSON.stringify(version)}, which this toolwire does not speak`);
    }
    this.#protocolVersion = version;
    void this.notify('notifications/initialized');
  }

  /**
   * Send request `method` and resolve with its result. Rejects with a {@link RpcError} for an error
   * answer, a {@link ServerLostError} when its response stream ends or breaks without the answer, a
   * {@link NoAnswerError} past `timeoutMs`, the signal's reason when `signal` aborts, an
   * {@link HttpStatusError} for an HTTP error status, or a socket error. A request given up on is
   * cancelled on the server (`notifications/cancelled`).
   */
  async request(method: string, params: Record<string, unknown> | undefined, options: RequestBound): Promise<unknown> {
    const id = this.#nextId++;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(new NoAnswerError('request', options.timeoutMs, options.bound)), options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timer.signal]) : timer.signal;
    const wind = options.wind;
    const onWind = (): void => void this.#windDown(id, wind!.reason);
    if (wind?.aborted) onWind();
    else wind?.addEventListener('abort', onWind, { once: true });
    try {
      const message = { jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) };
      return resultOf((await this.#exchange('POST', message, id, signal, options.onNotification, options.asSent)).answer);
    } catch (error) {
      if (!signal.aborted) throw error;
      const reason: unknown = signal.reason;
      void this.notify('notifications/cancelled', { requestId: id, reason: reason instanceof Error ? reason.message : String(reason) });
      throw reason;
    } finally {
      clearTimeout(timeout);
      wind?.removeEventListener('abort', onWind);
    }
  }

  /** See {@link RequestBound.wind}. Never rejects. */
  async #windDown(id: RequestId, reason: unknown): Promise<void> {
    const posted = this.notify('notifications/cancelled', { requestId: id, reason: reason instanceof Error ? reason.message : String(reason) });
    await pTimeout(posted, { milliseconds: CLOSE_TIMEOUT_MS, message: false });
    await this.#endSession();
  }

  /**
   * Post notification `method`; {@link McpSession.close} waits for it within its bound. The returned
   * promise settles (never rejects) once the server took it or the post failed.
   */
  notify(method: string, params?: Record<string, unknown>): Promise<unknown> {
    const posted: Promise<unknown> = this.#exchange('POST', { jsonrpc: '2.0', method, ...(params !== undefined && { params }) }, undefined)
      .catch(() => {})
      .finally(() => this.#posting.delete(posted));
    this.#posting.add(posted);
    return posted;
  }

  /**
   * Let notifications still being posted go out (at most `flushMs`), DELETE the session (at most
   * {@link CLOSE_TIMEOUT_MS}; failures ignored), and close every connection. No timer is left. Idempotent.
   */
  async close(flushMs = 0): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (flushMs > 0 && this.#posting.size > 0) await pTimeout(Promise.all(this.#posting), { milliseconds: flushMs, message: false });
    await this.#endSession();
    this.#agent.destroy();
  }

  /** DELETE the session once (at most {@link CLOSE_TIMEOUT_MS}; failures ignored). The server then ends its response streams. */
  #endSession(): Promise<void> {
    this.#ending ??= (async () => {
      if (this.#sessionId === undefined) return;
      const bound = new AbortController();
      const timer = setTimeout(() => bound.abort(new Error('no answer to DELETE')), CLOSE_TIMEOUT_MS);
      await this.#exchange('DELETE', undefined, undefined, bound.signal).catch(() => {});
      clearTimeout(timer);
    })();
    return this.#ending;
  }

  /**
   * One HTTP request to the door. With `id`, resolves once the answer to request `id` has been read
   * from the response (an SSE stream or a JSON body); without, once the response headers arrive.
   */
  #exchange(
    method: 'POST' | 'DELETE',
    message: object | undefined,
    id: RequestId | undefined,
    signal?: AbortSignal,
    onNotification?: RequestBound['onNotification'],
    asSent?: RequestBound['asSent'],
  ): Promise<Exchange> {
    return new Promise<Exchange>((resolve, reject) => {
      let body = message === undefined ? undefined : JSON.stringify(message);
      if (body !== undefined && asSent !== undefined) body = body.replace(JSON.stringify(asSent.placeholder), () => asSent.text);
      const headers: Record<string, string> = { authorization: this.#authorization, accept: 'application/json, text/event-stream' };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
      if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
      let settled = false;
      let responded = false;
      const settle = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        outcome();
      };
      const onAbort = (): void => {
        settle(() => reject(asError(signal!.reason)));
        req.destroy();
      };
      const req = this.#request(this.#url, { method, headers, agent: this.#agent });
      req.on('error', (error) => settle(() => reject(responded ? new ServerLostError(`the response stream broke (${describe(error)})`) : error)));
      req.on('response', (res) => {
        responded = true;
        res.on('error', () => {}); // reported through 'close' (or not at all once settled)
        const status = res.statusCode ?? 0;
        const sessionHeader = res.headers['mcp-session-id'];
        const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined;
        if (status < 200 || status > 299) {
          readText(res).then(
            (text) => settle(() => reject(new HttpStatusError(status, errorDetail(text)))),
            (error: unknown) => settle(() => reject(asError(error))),
          );
          return;
        }
        if (id === undefined) {
          res.resume();
          settle(() => resolve({ answer: undefined, sessionId }));
          return;
        }
        const type = String(res.headers['content-type'] ?? '').toLowerCase();
        if (type.startsWith('application/json')) {
          readText(res).then(
            (text) => {
              const answer = answerOf(parseJson(text), id);
              settle(() => (answer ? resolve({ answer, sessionId }) : reject(new RpcError(undefined, `HTTP ${status} without the answer to ${id}`))));
            },
            (error: unknown) => settle(() => reject(asError(error))),
          );
          return;
        }
        if (!type.startsWith('text/event-stream')) {
          res.resume();
          settle(() => reject(new RpcError(undefined, `the server answered with content type ${JSON.stringify(type)}`)));
          return;
        }
        const parser = createParser({
          onEvent: (event) => {
            const parsed = parseJson(event.data);
            if (onNotification !== undefined && !settled) notificationsOf(parsed).forEach((n) => pauseFor(onNotification(n)));
            const answer = answerOf(parsed, id);
            if (answer) settle(() => resolve({ answer, sessionId }));
          },
        });
        const pauseFor = (wait: Promise<void> | undefined): void => {
          if (wait === undefined) return;
          res.pause();
          const resume = (): void => void res.resume();
          wait.then(resume, resume);
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => parser.feed(chunk));
        res.on('error', (error) => settle(() => reject(new ServerLostError(`the response stream broke (${describe(error)})`))));
        res.on('close', () => {
          const how = res.complete ? 'the server ended the response stream without an answer' : `the response stream broke (${describe()})`;
          settle(() => reject(new ServerLostError(how)));
        });
      });
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(body);
    });
  }
}

/**
 * Open an MCP session with the door at `url` (`Authorization: Bearer <token>`) within
 * `connectTimeoutMs`, else rejects with a {@link NoAnswerError} of phase `connect`. Otherwise
 * rejects as {@link McpSession.request} does (see {@link mcpFailure} for the exit statuses).
 */
export async function connectMcp(url: URL, token: string, options: ConnectOptions = {}): Promise<McpSession> {
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const http = url.protocol === 'https:' ? await import('node:https') : { Agent: HttpAgent, request: httpRequest };
  const session = new McpSession(url, token, http);
  const timer = new AbortController();
  const timeout = setTimeout(() => timer.abort(new NoAnswerError('connect', connectTimeoutMs, 'connect timeout, --connect-timeout')), connectTimeoutMs);
  try {
    await session.initialize(options.signal ? AbortSignal.any([options.signal, timer.signal]) : timer.signal);
  } catch (error) {
    await session.close();
    throw error;
  } finally {
    clearTimeout(timeout);
  }
  return session;
}
