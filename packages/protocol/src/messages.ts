/**
 * Wire messages, by direction (DESIGN §5). Every frame is one JSON text frame with a `type` field.
 * Shapes are enforced by the JSON Schemas in `schemas.ts`; these types mirror them.
 */
import type { Failure } from './codes.js';

/**
 * Hints about a tool's behaviour (the MCP `ToolAnnotations` hints): untrusted, for display and
 * policy, never a guarantee.
 */
export interface ToolAnnotations {
  /** The tool does not change its environment. */
  readOnlyHint?: boolean;
  /** The tool may make destructive updates (meaningful when not read-only). */
  destructiveHint?: boolean;
  /** Calling it again with the same input has no further effect. */
  idempotentHint?: boolean;
  /** The tool reaches an open world (the internet) rather than a closed domain. */
  openWorldHint?: boolean;
}

/**
 * One tool as a host advertises it. `inputSchema` must be a JSON Schema of `type: "object"`.
 * `title`, `annotations` and `outputSchema` (protocol 2, optional) describe it further; a protocol 1
 * connection never carries them.
 */
export interface ToolSpec {
  /** `[A-Za-z0-9_-]{1,64}`. */
  name: string;
  /** A human-readable name, at most 256 characters. */
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** Behaviour hints (MCP tool annotations). */
  annotations?: ToolAnnotations;
  /** A JSON Schema of `type: "object"` that the call's `structured` result conforms to (MCP `outputSchema`). */
  outputSchema?: Record<string, unknown>;
}

/**
 * One MCP content block as an MCP server returned it (`text`, `image`, `audio`, `resource_link`,
 * `resource`, …): passed through toolwire unchanged (protocol 2, `result.content`).
 */
export type ContentBlock = { type: string } & Record<string, unknown>;

// ---- host → server -------------------------------------------------------------------------

/** First frame a host sends after the upgrade. */
export interface HelloMessage {
  type: 'hello';
  /** Must equal `PROTOCOL_VERSION`. */
  protocol: number;
  /** Host software and version, free text for logs, e.g. `"@toolwire/client 0.1.0"`. */
  software?: string;
  /** Self-declared host name; honoured only by a server in loopback dev mode. */
  name?: string;
}

/**
 * The host's full tool set; replaces the previous one. The server checks the entries one by one
 * (a malformed entry rejects only itself) and examines a bounded number of them (DESIGN §6).
 */
export interface AdvertiseMessage {
  type: 'advertise';
  tools: ToolSpec[];
}

/**
 * The answer to one `call`. Bytes are UTF-8 text unless the matching `*Encoding` is `"base64"`.
 * When the call streamed (protocol 2), `stdout`/`stderr` carry only the bytes not sent in `output`
 * chunks, which come first: the capture is every chunk of the stream in `seq` order, then these.
 */
export interface ResultMessage {
  type: 'result';
  id: string;
  stdout: string;
  stderr: string;
  stdoutEncoding?: 'base64';
  stderrEncoding?: 'base64';
  /** 0–255. */
  exitCode: number;
  failure?: Failure;
  /**
   * Protocol 2: bytes of each stream sent in `output` chunks before this result, and how many
   * chunks (`chunks` = the next `seq`). The server checks them against what it received (a
   * mismatch is a protocol violation: 76), so a lost or extra chunk cannot pass unseen. Absent
   * when the call sent no `output`.
   */
  streamed?: { stdout: number; stderr: number; chunks: number };
  /**
   * Protocol 2: the MCP content blocks of a tool served from an MCP server, unchanged (at most 1024
   * blocks; the frame's `maxPayload` bounds their size). The MCP door returns them to the agent.
   */
  content?: ContentBlock[];
  /** Protocol 2: the MCP `structuredContent` of such a tool, unchanged (a JSON object). */
  structured?: Record<string, unknown>;
}

/**
 * Protocol 2: a piece of a running call's output (DESIGN §5, "Live output"). `seq` counts the
 * call's chunks from 0 over both streams, each one exactly one more than the last. Bytes as in
 * `result`: UTF-8 text, or base64 with `encoding: "base64"`. A host sends chunks only while the call
 * has window left: the decoded bytes of all its chunks never exceed `welcome.output.windowBytes`
 * plus every `credit` the server sent for the call.
 */
export interface OutputMessage {
  type: 'output';
  id: string;
  stream: 'stdout' | 'stderr';
  seq: number;
  data: string;
  encoding?: 'base64';
}

/**
 * Protocol 2: a running call says how far it got, without output (an in-process tool's
 * `ctx.progress(message)`). The server passes `message` on as the call's progress message (the MCP
 * door's `notifications/progress`); it uses no window.
 */
export interface ProgressMessage {
  type: 'progress';
  id: string;
  /** What the tool is doing now, one line, at most 256 characters. */
  message?: string;
}

export type HostMessage = HelloMessage | AdvertiseMessage | ResultMessage | OutputMessage | ProgressMessage;

// ---- server → host -------------------------------------------------------------------------

/** The limits a server announces in `welcome`; a host sizes its captures and concurrency by them. */
export interface WelcomeLimits {
  /** Largest frame the server accepts, bytes. */
  maxPayload: number;
  /** Calls the server sends at once at most. */
  maxInFlight: number;
  /** Tools accepted per advertise at most. */
  maxTools: number;
}

/** Protocol 2: the server takes live output; each call starts with this window. */
export interface WelcomeOutput {
  /** Bytes of output a call may send before the server's first `credit`. */
  windowBytes: number;
  /** Largest `data` of one `output` chunk, decoded bytes. */
  maxChunkBytes: number;
}

/** The server's answer to `hello`. */
export interface WelcomeMessage {
  type: 'welcome';
  protocol: number;
  /** The host identity the server bound to this connection (from the token). */
  host: string;
  /** Server ping interval, ms. */
  heartbeatMs: number;
  limits: WelcomeLimits;
  /** Protocol 2: present when the server takes `output` chunks; absent, the host streams nothing. */
  output?: WelcomeOutput;
}

/**
 * The server's answer to `advertise`. `as` is the name callers see (qualified or bare). The reply
 * is bounded: `rejected` lists at most `maxTools` entries (each reason at most 512 characters), and
 * `moreRejected` counts the rejected entries not listed (absent when every one is listed).
 */
export interface AdvertisedMessage {
  type: 'advertised';
  accepted: { name: string; as: string }[];
  rejected: { name: string; reason: string }[];
  /** Rejected entries beyond those listed in `rejected`, ≥ 1 when present. */
  moreRejected?: number;
}

/** One invocation sent to a host. */
export interface CallMessage {
  type: 'call';
  /** Correlation id, unique among this connection's pending calls. */
  id: string;
  /** The tool's name as the host advertised it (not qualified). */
  tool: string;
  input: unknown;
  workspace: string;
  agent: string;
  /** Time remaining until the deadline when the frame was sent, ms. */
  deadlineMs: number;
  /**
   * Protocol 2: the call's own id (the executor's or the caller's, `[A-Za-z0-9._-]{1,128}`): the
   * disk record's folder, the tool's `TOOLWIRE_CALL_ID` and the `call` field of every log line.
   * `id` stays the connection's correlation id (the wire id). Absent: the wire id is the call id.
   */
  callId?: string;
  /** Protocol 2: W3C `traceparent` of the call (the tool's `TRACEPARENT`), version 00. */
  traceparent?: string;
  /** Protocol 2: W3C `tracestate` that goes with `traceparent` (the tool's `TRACESTATE`), at most 512 characters. */
  tracestate?: string;
}

/** Cancel one in-flight call: the host kills the work and answers with what it has. */
export interface CancelMessage {
  type: 'cancel';
  id: string;
  reason: 'stop' | 'deadline';
}

/**
 * Protocol 2: more window for one call's output — the server has passed `bytes` of the call's
 * output on to its consumer. Credit for a call the host no longer runs is ignored.
 */
export interface CreditMessage {
  type: 'credit';
  id: string;
  /** Bytes added to the call's window (≥ 1). */
  bytes: number;
}

export type ServerMessage = WelcomeMessage | AdvertisedMessage | CallMessage | CancelMessage | CreditMessage;
