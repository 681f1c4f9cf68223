/**
 * Wire messages, by direction (DESIGN §5). Every frame is one JSON text frame with a `type` field.
 * Shapes are enforced by the JSON Schemas in `schemas.ts`; these types mirror them.
 */
import type { Failure } from './codes.js';

/** One tool as a host advertises it. `inputSchema` must be a JSON Schema of `type: "object"`. */
export interface ToolSpec {
  /** `[A-Za-z0-9_-]{1,64}`. */
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

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

/** The answer to one `call`. Bytes are UTF-8 text unless the matching `*Encoding` is `"base64"`. */
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
}

export type HostMessage = HelloMessage | AdvertiseMessage | ResultMessage;

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

/** The server's answer to `hello`. */
export interface WelcomeMessage {
  type: 'welcome';
  protocol: number;
  /** The host identity the server bound to this connection (from the token). */
  host: string;
  /** Server ping interval, ms. */
  heartbeatMs: number;
  limits: WelcomeLimits;
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
}

/** Cancel one in-flight call: the host kills the work and answers with what it has. */
export interface CancelMessage {
  type: 'cancel';
  id: string;
  reason: 'stop' | 'deadline';
}

export type ServerMessage = WelcomeMessage | AdvertisedMessage | CallMessage | CancelMessage;
