/**
 * Tool sources (DESIGN §7 "Tool sources"): one interface behind which every kind of tool a host
 * serves sits — in-process handlers (`in-process-source.ts`), manifest commands
 * (`command-source.ts`) and MCP servers (`mcp/`). A source says which tools it offers now, runs one
 * call of one of them with the call's input, context and output sink, tells when its set changed,
 * and closes. The call layer (`calls/call-session.ts`) does only the bookkeeping around a run: ids,
 * admission, deadline, cancel, the one result frame.
 */
import type { Capture, ToolSpec } from '@toolwire/protocol';
import type { CallAbort } from '../calls/abort.js';
import type { CallContext } from '../calls/tool-context.js';
import type { EnvPolicy } from '../subprocess/tool-env.js';

/** One tool a source offers now. Entries are replaced, never mutated: a call keeps the tool it started with. */
export interface SourceTool {
  /** The name advertised (unique on the host; see `ToolSet` for the naming rule across sources). */
  readonly name: string;
  /** The advertised face (`name` equals {@link name}). */
  readonly spec: ToolSpec;
  /** The source that runs it. */
  readonly source: ToolSource;
  /** The tool's own deadline, ms: a call gets `min(call deadline, timeoutMs)`. */
  readonly timeoutMs?: number | undefined;
  /** Calls of this tool running at once on the host; default: no bound of its own. */
  readonly maxConcurrency?: number | undefined;
}

/** Host-wide settings a run gets. Times in ms, sizes in bytes. */
export interface RunSettings {
  /** Working directory of subprocess tools without a `cwd`. */
  root: string;
  /** After an abort: time the work gets to end (SIGTERM → SIGKILL grace; an MCP server's answer to `notifications/cancelled`). */
  cancelGraceMs: number;
  /** How long a killed subprocess's pipes are still read. */
  drainMs: number;
  /** Per-stream capture cap for this connection. */
  capBytes: number;
  /** Spawn subprocess tools from the spawn helper. */
  spawnHelper: boolean;
  /** How subprocess tools' environments are built. */
  env: EnvPolicy;
}

/**
 * One call as a source runs it: the context the tool sees (`ctx`: facts, signal, and
 * `ctx.openOutput()`, the call's output sink), the abort the call layer owns, and the settings.
 */
export interface SourceCall {
  ctx: CallContext;
  abort: CallAbort;
  settings: RunSettings;
}

/**
 * What {@link ToolSource.run} returns: the capture known at once (a string is stdout with exit
 * code 0), or the work, a promise of the capture that never rejects and settles at the latest
 * `cancelGraceMs + drainMs` after the call's abort.
 */
export type RunStart = { text: string } | { capture: Capture } | { work: Promise<Capture> };

/** A kind of tool the host serves. */
export interface ToolSource {
  /** For logs: `in-process`, `manifest`, `mcp:<server>`. */
  readonly label: string;
  /** The tools it offers now, in its own order. */
  tools(): readonly SourceTool[];
  /** Run one call of `tool` (one of its own). Must not throw; a throw is answered 70 by the call layer. */
  run(tool: SourceTool, input: unknown, call: SourceCall): RunStart;
  /**
   * Why `name`, one of its tools until it withdrew them all (e.g. its MCP server died), is not
   * served now, while they are gone: a call to it that was already on its way is answered 69 with
   * this reason instead of 127 "no such tool". `undefined` otherwise. Optional.
   */
  withdrawn?(name: string): string | undefined;
  /** `listener` runs whenever {@link tools} changed (the host re-advertises). One listener. */
  onChange(listener: () => void): void;
  /** Stop: end every call it runs (as aborted), release processes and timers. Idempotent. */
  close(): Promise<void>;
}
