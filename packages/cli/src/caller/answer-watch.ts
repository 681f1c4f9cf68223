/**
 * The stdio door's watch on its answers (`stdio-bridge.ts`). The SDK's Streamable HTTP client
 * transport resolves a request's send as soon as the door's response headers arrive and reads the
 * SSE answer in the background; when that stream breaks (the server is lost) or ends without the
 * answer (the door closed the session: its caller token was revoked, or it shut down), it only reports
 * an error with no request id, and the request would wait for its timeout (24 h). The door's streams
 * are not resumable (it sends no SSE event ids), so no answer can follow: here the end of each
 * request's answer stream is reported with the request's id, after the turn in which the transport
 * handles what the stream carried (an answer on it is delivered first).
 */

/** How one request's answer stream ended: `error` when it broke, else it ended. */
export type AnswerStreamEnd = { id: number; error: Error | undefined };

/**
 * The id of a request the SDK client POSTs: its `Protocol.request` writes `{...request, jsonrpc:
 * "2.0", id: <integer>}`, so the id closes the body.
 */
const REQUEST_ID = /"jsonrpc":"2\.0","id":(\d{1,15})\}$/;

function requestIdOf(init: RequestInit | undefined): number | undefined {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return undefined;
  const match = REQUEST_ID.exec(init.body.slice(-48));
  return match === null ? undefined : Number(match[1]);
}

/** `body` as a stream of the same bytes that calls `ended` once when it ends or breaks. */
function watched(body: ReadableStream<Uint8Array>, ended: (error: Error | undefined) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        controller.error(error);
        setImmediate(ended, error instanceof Error ? error : new Error(String(error)));
        return;
      }
      if (chunk.done) {
        controller.close();
        setImmediate(ended, undefined);
      } else controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * `base` (a `fetch`), reporting the end of each SSE answer stream of a request (`onEnd`, once per
 * request, a turn after the stream's last bytes were handed on). Other responses are returned as they are.
 */
export function watchingAnswers(base: typeof fetch, onEnd: (end: AnswerStreamEnd) => void): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    const id = requestIdOf(init);
    if (id === undefined || response.body === null || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
    const body = watched(response.body, (error) => onEnd({ id, error }));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
