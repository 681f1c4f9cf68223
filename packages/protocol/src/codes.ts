/**
 * The closed tables of toolwire: exit codes of synthetic captures and WebSocket close codes.
 * Both are pinned by `test/codes.test.ts`; changing a value is a protocol change.
 *
 * @packageDocumentation
 */

/**
 * Exit codes a capture may carry when toolwire, not the tool, ended the call (DESIGN §4).
 * A tool's own exit code passes through unchanged; a tool killed by a signal we did not send
 * reports `128 + n` (shell convention, see {@link SIGNAL_EXIT_BASE}).
 *
 * | name | code | meaning | source |
 * |---|---|---|---|
 * | `OK` | 0 | success | — |
 * | `DATA_ERR` | 65 | input does not match the tool's inputSchema; nothing routed | sysexits.h EX_DATAERR |
 * | `UNAVAILABLE` | 69 | host disconnected, heartbeat lost, replaced, or gone before dispatch | sysexits.h EX_UNAVAILABLE |
 * | `SOFTWARE` | 70 | the tool host failed internally (handler threw, result not buildable) | sysexits.h EX_SOFTWARE |
 * | `TEMPFAIL` | 75 | overloaded: in-flight or buffered-bytes limit reached; retry later | sysexits.h EX_TEMPFAIL |
 * | `PROTOCOL` | 76 | protocol violation by the host (garbage, wrong shape, binary, oversize frame) | sysexits.h EX_PROTOCOL |
 * | `TIMEOUT` | 124 | deadline exceeded | coreutils timeout(1) |
 * | `CANNOT_EXECUTE` | 126 | tool found but cannot be executed (permission) | POSIX shell |
 * | `NOT_FOUND` | 127 | no such tool (not advertised, or the command is missing on the host) | POSIX shell |
 * | `CANCELLED` | 130 | cancelled by stop | 128 + SIGINT |
 *
 * Five more are used only as exit statuses of the `toolwire` CLI, never in a capture:
 * `USAGE` 64 (bad flags or arguments, sysexits.h EX_USAGE), `NO_INPUT` 66 (a token file that is
 * missing or unreadable, sysexits.h EX_NOINPUT), `NO_USER` 67 (`toolwire token revoke` of a name the
 * state folder does not hold, sysexits.h EX_NOUSER), `CANT_CREATE` 73 (the state folder is not a
 * folder or cannot be created or written, sysexits.h EX_CANTCREAT) and `NO_PERM` 77 (token refused,
 * a token file that group or others may read or write, the call was declined by the grant gate or
 * refused by tool control, or the state folder is not accessible, sysexits.h EX_NOPERM).
 */
export const ExitCode = {
  OK: 0,
  DATA_ERR: 65,
  UNAVAILABLE: 69,
  SOFTWARE: 70,
  TEMPFAIL: 75,
  PROTOCOL: 76,
  TIMEOUT: 124,
  CANNOT_EXECUTE: 126,
  NOT_FOUND: 127,
  CANCELLED: 130,
  USAGE: 64,
  NO_INPUT: 66,
  NO_USER: 67,
  CANT_CREATE: 73,
  NO_PERM: 77,
} as const;

/** One of the values of {@link ExitCode}. */
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** A tool killed by signal `n` that toolwire did not send reports `SIGNAL_EXIT_BASE + n` (POSIX shell). */
export const SIGNAL_EXIT_BASE = 128;

/**
 * Machine-readable cause of a synthetic capture, carried as `capture.failure`. The model reads only
 * stdout, stderr and the exit code; programs may branch on this. Each kind maps to one exit code.
 */
export const FailureKind = {
  invalid_input: ExitCode.DATA_ERR,
  unavailable: ExitCode.UNAVAILABLE,
  host_error: ExitCode.SOFTWARE,
  overloaded: ExitCode.TEMPFAIL,
  protocol: ExitCode.PROTOCOL,
  deadline: ExitCode.TIMEOUT,
  cannot_execute: ExitCode.CANNOT_EXECUTE,
  not_found: ExitCode.NOT_FOUND,
  cancelled: ExitCode.CANCELLED,
} as const;

/** One of the keys of {@link FailureKind}. */
export type Failure = keyof typeof FailureKind;

/**
 * WebSocket close codes toolwire sends (DESIGN §5). 1000–1011 are RFC 6455 §7.4.1;
 * 4000 is in the private-use range (RFC 6455 §7.4.2).
 *
 * | name | code | when |
 * |---|---|---|
 * | `NORMAL` | 1000 | orderly close by either side |
 * | `GOING_AWAY` | 1001 | server shutting down |
 * | `PROTOCOL_ERROR` | 1002 | unparsable frame, or a message not allowed in this state |
 * | `UNSUPPORTED_DATA` | 1003 | binary frame (toolwire speaks JSON text only) |
 * | `INVALID_PAYLOAD` | 1007 | text frame that is not valid UTF-8 |
 * | `POLICY_VIOLATION` | 1008 | a limit was broken (too many bad frames, hello timeout, token revoked) |
 * | `MESSAGE_TOO_BIG` | 1009 | frame over `maxPayload` |
 * | `INTERNAL_ERROR` | 1011 | unexpected server failure |
 * | `REPLACED` | 4000 | a newer connection of the same host identity took over |
 */
export const CloseCode = {
  NORMAL: 1000,
  GOING_AWAY: 1001,
  PROTOCOL_ERROR: 1002,
  UNSUPPORTED_DATA: 1003,
  INVALID_PAYLOAD: 1007,
  POLICY_VIOLATION: 1008,
  MESSAGE_TOO_BIG: 1009,
  INTERNAL_ERROR: 1011,
  REPLACED: 4000,
} as const;

/** One of the values of {@link CloseCode}. */
export type CloseCodeValue = (typeof CloseCode)[keyof typeof CloseCode];

/** The name of a close code for logs and stderr reasons, e.g. `closeCodeName(4000) === "REPLACED"`. */
export function closeCodeName(code: number): string {
  for (const [name, value] of Object.entries(CloseCode)) if (value === code) return name;
  return `UNKNOWN`;
}
