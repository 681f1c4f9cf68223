/**
 * `@toolwire/protocol/constants` — the exit codes, close codes, limits and defaults alone, without
 * the codec: for programs that need the tables but decode no frames (the `toolwire` CLI's caller
 * commands), so they load nothing else of the protocol package.
 *
 * @packageDocumentation
 */
export { ExitCode, type ExitCodeValue, SIGNAL_EXIT_BASE, FailureKind, type Failure, CloseCode, type CloseCodeValue, closeCodeName } from './codes.js';
export { Defaults, MAX_NAME_LENGTH, NAME_PATTERN, QUALIFIER } from './limits.js';
