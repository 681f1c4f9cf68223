/**
 * The exit statuses and defaults that the dispatcher and the `tools`/`call` commands use, the same
 * values as `@toolwire/protocol`'s `ExitCode` and `Defaults` (test/codes.test.ts holds them equal).
 * They are repeated here because importing the protocol package's root compiles its JSON Schemas
 * (ajv) at load time, which `toolwire --version` and `toolwire call` have no use for.
 */

/** Exit statuses (see `@toolwire/protocol` `ExitCode` for what each means). */
export const ExitCode = {
  OK: 0,
  USAGE: 64,
  UNAVAILABLE: 69,
  SOFTWARE: 70,
  NOT_FOUND: 127,
  NO_PERM: 77,
  CANCELLED: 130,
} as const;

/** Server defaults the caller commands assume (see `@toolwire/protocol` `Defaults`). */
export const Defaults = {
  /** A call's deadline when `--timeout` is not given, ms. */
  deadlineMs: 120_000,
  /** Time the server allows a cancelled call to stop before it reports it, ms. */
  cancelGraceMs: 2_000,
  /** Largest WebSocket frame the server accepts, bytes (the CLI's bound on INPUT_JSON from stdin). */
  maxPayload: 16 * 1024 * 1024,
} as const;
