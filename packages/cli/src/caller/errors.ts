/** The ways an MCP exchange of the caller commands fails, as typed errors (see `failure.ts` for their exit statuses). */

/** The server went away while a request was waiting for its answer (exit 69, "lost the server"). */
export class ServerLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerLostError';
  }
}

/**
 * No answer within a bound the CLI set (exit 69): `phase` `connect` (connect + initialize, the
 * connect timeout) or `request` (a request's own bound); `bound` explains how `ms` was made up.
 */
export class NoAnswerError extends Error {
  constructor(
    readonly phase: 'connect' | 'request',
    readonly ms: number,
    readonly bound: string,
  ) {
    super(`no answer within ${ms} ms (${bound})`);
    this.name = 'NoAnswerError';
  }
}

/** The door answered with an HTTP error status; `detail` is the JSON-RPC error message in its body, or the body. */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`HTTP ${status}${detail ? `: ${detail}` : ''}`);
    this.name = 'HttpStatusError';
  }
}

/** A JSON-RPC error answer, or an answer this caller cannot use (a wrong shape, an MCP version it does not speak). */
export class RpcError extends Error {
  constructor(
    readonly code: number | undefined,
    message: string,
  ) {
    super(code === undefined ? message : `MCP error ${code}: ${message}`);
    this.name = 'RpcError';
  }
}
