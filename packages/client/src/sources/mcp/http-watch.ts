/**
 * The `fetch` a Streamable HTTP MCP server's transport uses (DESIGN §7 "MCP servers"): the global
 * `fetch`, watching the response stream of each `tools/call` this host sends (`tool-calls.ts`, ids
 * `tw-<n>`). The SDK's transport resolves a request's send as soon as the response headers arrive and
 * reads an SSE answer in the background; when that stream breaks (the server went away) or ends
 * without the answer, the SDK only reports an error with no request id, and the call would wait for
 * its deadline. Here the end of each such stream is reported with the call's id, whether it broke,
 * and whether the server made it resumable (an SSE `id:` field: the SDK then reconnects and the
 * server may replay the answer).
 */

/** How the response stream of one `tools/call` ended. */
export interface CallStreamEnd {
  /** The stream broke (a network error), rather than ending. */
  error: Error | undefined;
  /** The server sent an SSE event id on it: the SDK resumes the stream, the answer may still come. */
  resumable: boolean;
}

/** A request body this host sent for a call: `tool-calls.ts` writes `{"jsonrpc":"2.0","id":"tw-<n>","method":"tools/call",…`. */
const CALL_BODY = /^\{"jsonrpc":"2\.0","id":"(tw-\d{1,16})","method":"tools\/call"/;
/** An SSE `id` field at the start of a line (what makes a stream resumable). */
const EVENT_ID = /(?:^|[\r\n])id:/;

/** The call id of a POST `init`, when it is one of this host's `tools/call` requests. */
function callIdOf(init: RequestInit | undefined): string | undefined {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return undefined;
  return CALL_BODY.exec(init.body.slice(0, 80))?.[1];
}

/** `body` as a stream of the same bytes that reports its end to `ended`, once. */
function watched(body: ReadableStream<Uint8Array>, ended: (end: CallStreamEnd) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let tail = '';
  let resumable = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        ended({ error: error instanceof Error ? error : new Error(String(error)), resumable });
        controller.error(error);
        return;
      }
      if (chunk.done) {
        ended({ error: undefined, resumable });
        controller.close();
        return;
      }
      if (!resumable) {
        const text = tail + decoder.decode(chunk.value, { stream: true });
        resumable = EVENT_ID.test(text);
        tail = text.slice(-3);
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * A `fetch` that reports, for each POST of a `tools/call` whose answer comes as an SSE stream, how
 * that stream ended (`onEnd(id, end)`, at most once per request; the answer, when the stream carried
 * it, reaches the transport first or in the same turn).
 */
export function watchingFetch(onEnd: (id: string, end: CallStreamEnd) => void, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    const id = callIdOf(init);
    if (id === undefined || response.body === null || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
    const body = watched(response.body, (end) => onEnd(id, end));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
