/**
 * The host-injection seam (seed 000: `ToolInjection`, `RoutedCall`, `RoutedCapture`, router
 * obligations). One object holds both halves — what the agent is told exists, and who answers —
 * so they cannot disagree.
 */
import type { Capture, ToolAnnotations } from '@toolwire/protocol';

/** One tool definition put in front of the agent (seed: `InjectedTool`). */
export interface InjectedTool {
  /** The name the model spells, and the name the grant gate and the router key on. */
  name: string;
  /** Sent verbatim as the tool's input schema. */
  inputSchema: Record<string, unknown>;
  description?: string;
  /** A human-readable name, as the host advertised it (protocol 2). */
  title?: string;
  /** Behaviour hints, as the host advertised them (protocol 2; untrusted). */
  annotations?: ToolAnnotations;
  /** The schema of the tool's own structured result (a tool of an MCP server), as advertised. */
  outputSchema?: Record<string, unknown>;
}

/** One invocation handed to a router (seed: `RoutedCall`). */
export interface RoutedCall {
  /** The caller's call id (e.g. `tool_use.id`); the disk record's directory name. */
  id: string;
  /** The tool name as the model spelled it. */
  name: string;
  /** The input, verbatim — a subprocess's stdin. */
  input: unknown;
  /** The calling agent's workspace root (`TOOLWIRE_WORKSPACE` on the host). */
  workspace: string;
  /** The calling agent's id (`TOOLWIRE_AGENT` on the host). */
  agent: string;
  /** Aborted when a stop lands mid-invocation; the router must end the call promptly (→ 130). */
  signal: AbortSignal;
  /** Time allowed for this call, ms; default: the tool's or the server's deadline. On expiry → 124. */
  deadlineMs?: number;
  /**
   * Live output (DESIGN §5): called with each piece of the call's stdout and stderr while it runs,
   * in order (`seq` 0, 1, 2, … over both streams), never after the call settled. For a call that
   * streamed, the chunks of a stream are all of its bytes: the host's chunks, then the bytes its
   * result still carried, then the `toolwire: <reason>` line when toolwire ended the call (124,
   * 130, 69, 76); the capture keeps the head and tail of that within the capture cap. A call whose
   * host does not stream (protocol 1, or a tool that writes nothing) never calls it.
   *
   * Returning a promise is backpressure: the chunk's bytes are credited back to the host (its window,
   * `outputWindowBytes`) only when the promise settles, so a slow consumer slows the tool. A throw
   * or a rejection is logged and never affects the call.
   */
  onOutput?: OutputListener;
  /**
   * Progress (DESIGN §5): called when the call's tool says how far it got without writing output
   * (an in-process tool's `ctx.progress(message)`, protocol 2), with its message (one line, at most
   * 256 characters) or `undefined`. Never after the call settled; a throw is logged and never affects
   * the call. A host that does not stream never calls it.
   */
  onProgress?: ProgressListener;
  /**
   * W3C `traceparent` of the call (version 00), sent to the host in the `call` frame (protocol 2)
   * and given to the tool as `TRACEPARENT`. Absent: the call carries no trace context.
   */
  traceparent?: string;
  /** W3C `tracestate` that goes with `traceparent` (the tool's `TRACESTATE`). */
  tracestate?: string;
  /** Set by the router: the host identity the call was sent to (for logs and metrics). */
  host?: string;
  /** Set by the router for a host on another cluster node: that node's id (for logs, metrics and status). */
  node?: string;
  /**
   * Set by the host session: the connection's correlation id of the call (the `call` frame's `id`)
   * when it differs from `id`; logged with `id` and recorded in `output.json` as `wireId`.
   */
  wireId?: string;
}

/** One piece of a running call's output (see {@link RoutedCall.onOutput}). */
export interface OutputChunk {
  stream: 'stdout' | 'stderr';
  /** The bytes, as the tool wrote them (not split on characters or lines). Not reused after the call. */
  bytes: Uint8Array;
  /** Position among the call's chunks over both streams, from 0. */
  seq: number;
}

/** A consumer of live output: see {@link RoutedCall.onOutput}. */
export type OutputListener = (chunk: OutputChunk) => void | Promise<void>;

/** A consumer of a call's progress messages: see {@link RoutedCall.onProgress}. */
export type ProgressListener = (message: string | undefined) => void;

/**
 * What a router produced (seed: `RoutedCapture`): stdout, stderr, exit code — plus an optional
 * `failure` kind when toolwire ended the call.
 */
export type RoutedCapture = Capture;

/**
 * The seam. Router obligations (seed 000): `route` bounds every wait (deadline → 124), renders a
 * vanished endpoint as a non-zero capture with the reason on stderr (never a hang or a throw), and
 * watches `call.signal` so a stop ends the call promptly (→ 130).
 */
export interface ToolInjection {
  /**
   * Every tool currently advertised by a connected host. Read by prompt assembly and the grant gate.
   * Return a new array when the set changes (never mutate a returned one): the executor indexes each
   * distinct array once.
   */
  tools(): InjectedTool[];
  /** Answer `call`, or `undefined` for "not mine" (the executor then falls through). Never rejects. */
  route(call: RoutedCall): Promise<RoutedCapture | undefined>;
}
