/**
 * The two admission gates in front of every invocation (DESIGN §3): the grant gate and tool
 * control. Neither produces a capture: a call that does not pass is `declined` or `refused`.
 */

/** The grant entry that admits every tool name. */
export const GRANT_ALL = '*';

/**
 * Grant gate: is `name` in `grant`? `"*"` admits every name; `undefined` means no gate (same as
 * `["*"]`, the `CallerCredential.grant` default). Names are compared exactly, as the model spells them.
 */
export function isGranted(grant: readonly string[] | undefined, name: string): boolean {
  if (grant === undefined) return true;
  return grant.includes(GRANT_ALL) || grant.includes(name);
}

/** What tool control is asked about one invocation (before input validation and routing). */
export interface ToolControlRequest {
  /** The call id. */
  id: string;
  /** The tool name as the model spelled it. */
  name: string;
  /** The input, verbatim (not yet validated against the tool's inputSchema). */
  input: unknown;
  /** The calling agent's id. */
  agent: string;
  /** The caller's role, when the caller named one (the MCP door passes `"caller"`). */
  role: string | undefined;
}

/** Tool control's answer. */
export type ToolControlDecision = { action: 'pass' } | { action: 'refuse'; reason: string };

/**
 * Optional async policy hook consulted once per invocation. It fails closed: a throw, a rejection or
 * a return value that is not a {@link ToolControlDecision} refuses the call.
 */
export type ToolControl = (request: ToolControlRequest) => ToolControlDecision | Promise<ToolControlDecision>;

/** Outcome of {@link consultToolControl}: `{pass: true}`, or `{pass: false, reason}` for a refusal. */
export type ControlVerdict = { pass: true } | { pass: false; reason: string };

/**
 * Ask `control` about `request`; fails closed. Resolves `{pass: true}` only for a well-formed
 * `{action: 'pass'}`; a refusal keeps the hook's reason; a throw becomes
 * `tool control failed: <message>`; a malformed answer becomes `tool control returned an invalid decision`.
 * Never rejects.
 */
export async function consultToolControl(control: ToolControl, request: ToolControlRequest): Promise<ControlVerdict> {
  let decision: unknown;
  try {
    decision = await control(request);
  } catch (error) {
    return { pass: false, reason: `tool control failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (typeof decision === 'object' && decision !== null) {
    const d = decision as { action?: unknown; reason?: unknown };
    if (d.action === 'pass') return { pass: true };
    if (d.action === 'refuse' && typeof d.reason === 'string') return { pass: false, reason: d.reason };
  }
  return { pass: false, reason: 'tool control returned an invalid decision' };
}

/**
 * Resolve with `promise`'s value, or `undefined` as soon as `signal` aborts (a stop while tool
 * control is still deciding). `promise` must not reject ({@link consultToolControl} never does).
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then((value) => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    });
  });
}
