/**
 * One call of a tool of an MCP server as the source runs it (DESIGN §7 "MCP servers"): the promise
 * of its capture and every way it settles — the server's answer, a failed request, the call's abort
 * (settled at once, whatever the server does later), or the server's death. An object per call with
 * its methods on the prototype, instead of a closure for each way.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type Capture, failureCapture } from '@toolwire/protocol';
import type { CallAborted } from '../../calls/abort.js';
import { capCapture } from '../../calls/capture-cap.js';
import type { CallContext } from '../../calls/tool-context.js';
import type { ToolCallHandler } from './tool-calls.js';
import { captureOf } from './tool-map.js';

/** Most characters of an MCP server's error text kept in a call's reason line; the rest is cut (`…`). */
export const MAX_SERVER_REASON_CHARS = 1024;

// eslint-disable-next-line no-control-regex -- an MCP server's text must reach no terminal or log line as escapes or extra lines
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * An MCP server's error text as part of one reason line (a capture's `toolwire:` stderr line, read
 * by terminals, logs and models): at most {@link MAX_SERVER_REASON_CHARS} characters, then `…`;
 * each control, bidirectional formatting and line separator character as its `\uXXXX` escape.
 */
export function serverReason(text: string): string {
  const cut = text.length > MAX_SERVER_REASON_CHARS ? `${text.slice(0, MAX_SERVER_REASON_CHARS)}…` : text;
  return cut.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The connection a call runs on, as the call sees it. */
export interface McpConnection {
  /** The MCP server's name (for reasons). */
  readonly server: string;
  /** Why the connection is down, or `undefined` while it is up. */
  down(): string | undefined;
}

/** A call in flight on an MCP server. {@link work} resolves once, never rejects on the server's account. */
export class McpCall implements ToolCallHandler {
  readonly work: Promise<Capture>;
  readonly #connection: McpConnection;
  readonly #hasOutputSchema: boolean;
  readonly #capBytes: number;
  readonly #ctx: CallContext;
  #resolve!: (capture: Capture) => void;
  #reject!: (error: unknown) => void;
  #settled = false;

  /**
   * @param hasOutputSchema the tool declares an `outputSchema`: its `structuredContent` is kept
   * @param capBytes per-stream capture cap, bytes
   */
  constructor(connection: McpConnection, hasOutputSchema: boolean, capBytes: number, ctx: CallContext) {
    this.#connection = connection;
    this.#hasOutputSchema = hasOutputSchema;
    this.#capBytes = capBytes;
    this.#ctx = ctx;
    this.work = new Promise<Capture>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  done(result: CallToolResult): void {
    this.#settle(captureOf(result, this.#hasOutputSchema));
  }

  failed(reason: string): void {
    const down = this.#connection.down();
    this.#settle(
      down !== undefined
        ? failureCapture('unavailable', down)
        : failureCapture('host_error', `MCP server ${this.#connection.server} failed the call: ${serverReason(reason)}`),
    );
  }

  progress(message: string): void {
    if (!this.#settled) this.#ctx.progress(message);
  }

  /** The server died or the source closed: 69 with `reason`. */
  gone(reason: string): void {
    this.#settle(failureCapture('unavailable', reason));
  }

  /** The call was stopped or reached its deadline: the abort's capture (130 / 124), at once. */
  aborted(reason: CallAborted): void {
    this.#settle(failureCapture(reason.failure, reason.message));
  }

  /** True once the call has its capture. */
  get settled(): boolean {
    return this.#settled;
  }

  #settle(capture: Capture): void {
    if (this.#settled) return;
    this.#settled = true;
    try {
      const output = this.#ctx.output; // opened by progress during the call
      this.#resolve(output === undefined ? capCapture(capture, this.#capBytes) : output.close(capture));
    } catch (error) {
      this.#reject(error); // the call layer answers 70
    }
  }
}
