/**
 * Public types of the tool host (DESIGN §7): what a tool handler receives, what a subprocess tool
 * is, and the logging surface.
 */
import type { Capture, ToolAnnotations } from '@toolwire/protocol';
import type { Logger as PinoLogger } from 'pino';

/** The logging surface toolwire uses (a pino logger fits). */
export type Logger = Pick<PinoLogger, 'debug' | 'info' | 'warn' | 'error'>;

/** The facts of one call (from the server's `call` frame): what a subprocess tool gets as `TOOLWIRE_*` variables. */
export interface CallFacts {
  /**
   * The call's own id (`TOOLWIRE_CALL_ID` for subprocesses): the server's call id (its disk record's
   * folder and the `call` of its log lines) from a protocol 2 server, else the connection's id.
   */
  id: string;
  /** The calling agent's id (`TOOLWIRE_AGENT`). */
  agent: string;
  /** W3C `traceparent` of the call (`TRACEPARENT`), when the caller gave trace context. */
  traceparent?: string;
  /** W3C `tracestate` going with `traceparent` (`TRACESTATE`). */
  tracestate?: string;
  /** The calling agent's workspace root (`TOOLWIRE_WORKSPACE`). */
  workspace: string;
  /**
   * Time allowed for this call, ms: the call's remaining deadline, lowered to the tool's own
   * `timeoutMs` when that is smaller (`TOOLWIRE_DEADLINE_MS`).
   */
  deadlineMs: number;
  /**
   * Aborted on `cancel` (reason a {@link CallAborted} with failure `cancelled` → exit 130), at the
   * deadline (`deadline` → 124), or when the connection is lost or the host closes (`unavailable`).
   */
  signal: AbortSignal;
}

/** What an in-process tool receives with each call: the call's facts, and where its live output goes. */
export interface ToolContext extends CallFacts {
  /**
   * Write output now (DESIGN §5 "Live output"): on a server that takes live output the bytes reach
   * the caller while the tool runs, as `output` chunks within the call's window; otherwise they are
   * kept (head + tail, the capture cap) and travel in the result. Either way the capture is what
   * was written, in order, followed by the streams of the capture the handler returns. A string is
   * written as UTF-8. Resolves when more may be written: at once while the window holds, else when
   * the server granted more (a slow caller slows the tool). After the call ended, writes are dropped.
   * @throws TypeError when `stream` is not `stdout` or `stderr`, or `data` is not a string or Uint8Array
   * @throws RangeError when called while an earlier write still waits for the window (await each write)
   */
  write(stream: 'stdout' | 'stderr', data: Uint8Array | string): Promise<void>;
  /**
   * Say how far the tool got (protocol 2 `progress`; the MCP door passes it on as the call's
   * progress message): one line, at most 256 characters (longer is cut, line breaks become spaces).
   * Sent at most every 100 ms, the latest message winning; uses no window. Nothing is sent on a
   * server without live output.
   * @throws TypeError when `message` is neither a string nor undefined
   */
  progress(message?: string): void;
}

/**
 * An in-process tool. Return a string (stdout, exit code 0) or a full {@link Capture}. A throw
 * becomes a capture with exit code 70 and the message on stderr; when the call was aborted first,
 * the abort's capture (130 or 124) wins.
 */
export type ToolHandler = (input: unknown, ctx: ToolContext) => Promise<Capture | string> | Capture | string;

/** The advertised face of an in-process tool. */
export interface InProcessToolSpec {
  /** A human-readable name, at most 256 characters (sent on protocol 2 connections). */
  title?: string;
  description?: string;
  /** A JSON Schema with `type: "object"`; the server validates call inputs against it. */
  inputSchema: Record<string, unknown>;
  /** Behaviour hints (MCP tool annotations; sent on protocol 2 connections). */
  annotations?: ToolAnnotations;
  /** A JSON Schema with `type: "object"` of the tool's structured result (sent on protocol 2 connections). */
  outputSchema?: Record<string, unknown>;
}

/** A subprocess tool as {@link ToolHost.command} takes it (what a manifest entry becomes, minus its name). */
export interface CommandSpec extends InProcessToolSpec {
  /** argv, run directly (no shell): `command[0]` is looked up on `PATH`. Non-empty. */
  command: string[];
  /** Working directory; default: the host's `root`. Absolute, or relative to the host process's cwd. */
  cwd?: string;
  /** Extra environment variables, added to the inherited environment (after `envPassthrough`). */
  env?: Record<string, string>;
  /**
   * Names of host environment variables passed to the tool even when the host does not inherit its
   * environment (`ToolHostOptions.inheritEnv: false`). The host's credentials are never passed.
   */
  envPassthrough?: string[];
  /** The tool's own deadline, ms; a call gets `min(call deadline, timeoutMs)`. */
  timeoutMs?: number;
  /**
   * Calls of this tool running at once on the host (manifest `max_concurrency`), within the host's
   * `maxConcurrentCalls`; more wait in the host's queue. A positive integer; default: no bound of its own.
   */
  maxConcurrency?: number;
}

/** One manifest entry: a named {@link CommandSpec} (from {@link loadManifest}). */
export interface CommandToolSpec extends CommandSpec {
  /** `[A-Za-z0-9_-]{1,64}`. */
  name: string;
}
