/**
 * Notices when the server drops a request's response stream before answering it — the server was
 * killed, crashed, or closed the session. The SDK's Streamable HTTP client does not fail the request
 * then (a broken SSE stream only reaches `onerror`, a stream that simply ends reaches nothing), so
 * without this the request would wait for its timeout.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

type RequestId = string | number;

/**
 * Time between the end of a response stream and the verdict "left unanswered", ms: the answer read
 * just before the end still passes the SDK's decoder and SSE parser (promise jobs) after it.
 */
const VERDICT_DELAY_MS = 20;

/** Ids of the JSON-RPC requests in a POST body (a message or a batch); `[]` for anything else. */
function requestIds(body: unknown): RequestId[] {
  if (typeof body !== 'string') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return messages.flatMap((m) => {
    const id = typeof m === 'object' && m !== null && 'method' in m ? (m as { id?: unknown }).id : undefined;
    return typeof id === 'string' || typeof id === 'number' ? [id] : [];
  });
}

/** The most telling words of a stream error: undici's `terminated` carries `other side closed` in its cause. */
function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  const text = cause?.message ?? cause?.code ?? (error instanceof Error ? error.message : String(error));
  return text || 'stream error';
}

/** `body` passed through unchanged; `onEnd` once when it ends (`error` when it broke). */
function watchBody(body: ReadableStream<Uint8Array>, onEnd: (error?: unknown) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onEnd(error);
        controller.error(error);
        return;
      }
      if (chunk.done) {
        onEnd();
        controller.close();
      } else controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * Watches the response streams of one MCP client session. Give {@link ResponseWatch.fetch} to the
 * transport and every message the transport delivers to {@link ResponseWatch.seen}; when a stream
 * that carried requests ends or breaks while one of them is still unanswered, {@link ResponseWatch.lost}
 * aborts with an Error naming the cause. {@link ResponseWatch.close} stops watching (our own close
 * breaks the streams too) and clears every timer.
 */
export class ResponseWatch {
  readonly #lost = new AbortController();
  readonly #answered = new Set<RequestId>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  /** Aborted (reason: an Error) once a request's response stream ended without its answer. */
  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  /** A `fetch` for the transport: POST responses streamed as SSE are watched; everything else passes. */
  readonly fetch: FetchLike = async (url, init) => {
    const response = await fetch(url, init);
    const ids = init?.method === 'POST' ? requestIds(init.body) : [];
    const sse = response.headers.get('content-type')?.toLowerCase().startsWith('text/event-stream') === true;
    if (ids.length === 0 || !response.ok || !sse || response.body === null) return response;
    const body = watchBody(response.body, (error) => this.#ended(ids, error));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  /** Record a message the server sent (responses mark their request answered). */
  seen(message: JSONRPCMessage): void {
    if (!('method' in message) && 'id' in message && (typeof message.id === 'string' || typeof message.id === 'number')) {
      this.#answered.add(message.id);
    }
  }

  /** Stop watching: no verdict after this, no timer left. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #ended(ids: RequestId[], error: unknown): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#closed || this.#lost.signal.aborted) return;
      const unanswered = ids.some((id) => !this.#answered.has(id));
      for (const id of ids) this.#answered.delete(id);
      if (!unanswered) return;
      const how = error === undefined ? 'the server ended the response stream without an answer' : `the response stream broke (${describe(error)})`;
      this.#lost.abort(new Error(how));
    }, VERDICT_DELAY_MS);
    this.#timers.add(timer);
  }
}
