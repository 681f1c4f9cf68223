/**
 * How a caller's tool name and a thrown value appear in reasons, log lines and the status board:
 * bounded, and never the caller's whole string kept alive.
 */
/** Characters of a caller's tool name kept where the server keeps or logs it; no exposed name is longer than 64. */
const SHOWN_NAME_CHARS = 80;

/**
 * `name` as the server keeps it beside a call (status board, log lines, trace attribute): whole, or
 * its first {@link SHOWN_NAME_CHARS} characters then `…` as a new string (a slice would keep the
 * caller's whole string alive — up to the 4 MiB of an MCP body — in each board entry and cached logger).
 */
export function shown(name: string): string {
  return name.length > SHOWN_NAME_CHARS ? Array.from(name.slice(0, SHOWN_NAME_CHARS)).join('') + '…' : name;
}

/** A name for a reason line: JSON-quoted, at most {@link SHOWN_NAME_CHARS} characters of it. */
export function quote(name: string): string {
  return JSON.stringify(shown(name));
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
