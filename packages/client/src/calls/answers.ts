/** Captures the call layer answers with itself: a tool that is not here, or tool host code that threw. */
import { type Capture, failureCapture } from '@toolwire/protocol';

/** Why tool host code failed while running a call, for stderr. */
export function hostFailedReason(error: unknown): string {
  return `tool host failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** The capture of a call whose tool host code threw while building it (70). */
export function hostFailed(error: unknown): Capture {
  return failureCapture('host_error', hostFailedReason(error));
}

/**
 * The capture of a call to `tool`, which this host does not serve: 127 "no such tool", or 69 with
 * `withdrawn` when its source withdrew it (its MCP server died while the call was on its way).
 */
export function notServed(tool: string, withdrawn: string | undefined): Capture {
  const name = JSON.stringify(tool);
  return withdrawn === undefined
    ? failureCapture('not_found', `no such tool ${name} on this host`)
    : failureCapture('unavailable', `tool ${name} is gone: ${withdrawn}`);
}
