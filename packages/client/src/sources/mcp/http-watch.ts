/**
 * The `fetch` a Streamable HTTP MCP server's transport uses (DESIGN §7 "MCP servers"): the global
 * `fetch`, watching the response stream of each `tools/call` this host sends (`tool-calls.ts`, ids
 * `tw-<n>`). The SDK's transport resolves a request's send as soon as the response headers arrive and
 * reads an SSE answer in the background; when that stream breaks (the server went away) or ends
 * without the answer, the SDK only reports an error with no request id, and the call would wait for
 * its deadline. Here the end of each such stream is reported with the call's id, whether it broke,
 * and whether the server made it resumable (an SSE `id:` field: the SDK then reconnects and the
 * server may replay the answer). Every response body is bounded too: a message (an SSE event, or a
 * JSON body) longer than `max_message_bytes` breaks it off, as a longer line from a stdio server does.
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

/** What {@link watched} watches for: the end of a call's answer stream, a message past the bound. */
interface Watch {
  /** Bytes of one message at most: an SSE event, or a whole JSON body. */
  maxMessageBytes: number;
  sse: boolean;
  /** Reported once when the stream ends or breaks (a call's answer stream only). */
  ended?: (end: CallStreamEnd) => void;
  /** A message past {@link maxMessageBytes}: the stream is then broken off. */
  tooLong: () => void;
}

/** Where the last SSE event boundary (a blank line) in `bytes` ends, or -1; `lastByte`: the byte before `bytes`. */
function boundaryEnd(bytes: Buffer, lastByte: number): number {
  const lf = bytes.lastIndexOf('\n\n');
  const crlf = bytes.lastIndexOf('\r\n\r\n');
  const cr = bytes.lastIndexOf('\r\r');
  const end = Math.max(lf < 0 ? -1 : lf + 2, crlf < 0 ? -1 : crlf + 4, cr < 0 ? -1 : cr + 2);
  if (end >= 0) return end;
  return (lastByte === 0x0a && bytes[0] === 0x0a) || (lastByte === 0x0d && bytes[0] === 0x0d) ? 1 : -1;
}

/** `body` as a stream of the same bytes, watched (see {@link Watch}). */
function watched(body: ReadableStream<Uint8Array>, watch: Watch): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let tail = '';
  let resumable = false;
  let pending = 0; // bytes of the message being received
  let lastByte = -1;
  let over = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (!over) watch.ended?.({ error: error instanceof Error ? error : new Error(String(error)), resumable });
        controller.error(error);
        return;
      }
      if (chunk.done) {
        watch.ended?.({ error: undefined, resumable });
        controller.close();
        return;
      }
      const bytes = Buffer.from(chunk.value.buffer, chunk.value.byteOffset, chunk.value.byteLength);
      const end = watch.sse ? boundaryEnd(bytes, lastByte) : -1;
      pending = end >= 0 ? bytes.length - end : pending + bytes.length;
      lastByte = bytes.length > 0 ? bytes[bytes.length - 1]! : lastByte;
      if (pending > watch.maxMessageBytes) {
        over = true;
        const error = new Error(`a message longer than ${watch.maxMessageBytes} bytes`);
        watch.tooLong();
        controller.error(error);
        void reader.cancel(error).catch(() => {});
        return;
      }
      if (watch.ended !== undefined && !resumable) {
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

/** What {@link watchingFetch} reports. */
export interface FetchWatch {
  /** Bytes of one message from the server at most (`max_message_bytes`). */
  maxMessageBytes: number;
  /** How the SSE answer stream of `tools/call` `id` ended (at most once per request; an answer it carried reaches the transport first or in the same turn). */
  callEnded: (id: string, end: CallStreamEnd) => void;
  /** A response carried a message longer than `maxMessageBytes` (the response is broken off). */
  tooLong: () => void;
}

/**
 * A `fetch` that watches every response body: a message past `maxMessageBytes` breaks it off
 * (`tooLong`), and the end of the SSE answer stream of each `tools/call` is reported (`callEnded`).
 */
export function watchingFetch(watch: FetchWatch, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    // A redirect goes back to the SDK as it came (its origin check reads the response itself).
    if (response.body === null || (response.status >= 300 && response.status < 400)) return response;
    const sse = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const id = sse ? callIdOf(init) : undefined;
    const body = watched(response.body, {
      maxMessageBytes: watch.maxMessageBytes,
      sse,
      ...(id !== undefined && { ended: (end: CallStreamEnd) => watch.callEnded(id, end) }),
      tooLong: watch.tooLong,
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** What a Streamable HTTP server's connection does with what its fetch sees ({@link connectionFetch}). */
export interface ConnectionWatch {
  /** The server's name (for reasons). */
  name: string;
  maxMessageBytes: number;
  /** The connection is lost (a death): `reason`. */
  lose: (reason: string) => void;
  /** Call `id` can get no answer: it ends 69 with `reason` (unless it was answered). */
  unanswered: (id: string, reason: string) => void;
}

/**
 * The fetch of a Streamable HTTP server's transport: a call's answer stream that breaks, or a message
 * past the bound, loses the connection; one that ends without the answer (not resumable) ends that call.
 */
export function connectionFetch(watch: ConnectionWatch): typeof fetch {
  const { name } = watch;
  return watchingFetch({
    maxMessageBytes: watch.maxMessageBytes,
    callEnded: (id, end) => {
      if (end.error !== undefined) watch.lose(`MCP server ${name} closed its connection during a call (${end.error.message})`);
      else if (!end.resumable) watch.unanswered(id, `MCP server ${name} ended the stream of a call without its answer`);
    },
    tooLong: () => watch.lose(`MCP server ${name} sent a message longer than ${watch.maxMessageBytes} bytes`),
  });
}

/**
 * Why a request to a Streamable HTTP server that could not be sent loses the connection: unreachable
 * (a network error: a `TypeError` from fetch) or its session is gone (HTTP 404); else `undefined`.
 */
export function sendLoss(name: string, error: unknown, httpError: new (...args: never[]) => Error & { code?: number }): string | undefined {
  if (error instanceof TypeError) return `MCP server ${name} closed its connection (${error.message})`;
  if (error instanceof httpError && error.code === 404) return `MCP server ${name} closed its connection (its session ended: HTTP 404)`;
  return undefined;
}
