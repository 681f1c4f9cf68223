/**
 * `@toolwire/protocol` — the wire contract shared by the server and the tool host: messages and
 * their JSON Schemas, the codec, limits and defaults, exit codes and close codes, captures.
 *
 * @packageDocumentation
 */
export { ExitCode, type ExitCodeValue, SIGNAL_EXIT_BASE, FailureKind, type Failure, CloseCode, type CloseCodeValue, closeCodeName } from './codes.js';
export { Defaults, MAX_NAME_LENGTH, NAME_PATTERN, QUALIFIER } from './limits.js';
export { PROTOCOL_VERSION, PROTOCOL_VERSIONS, SUBPROTOCOL, SUBPROTOCOLS, subprotocolOf, versionOfSubprotocol } from './version.js';
export type {
  ToolSpec,
  ToolAnnotations,
  ContentBlock,
  HelloMessage,
  AdvertiseMessage,
  ResultMessage,
  OutputMessage,
  ProgressMessage,
  HostMessage,
  WelcomeLimits,
  WelcomeMessage,
  AdvertisedMessage,
  CallMessage,
  CancelMessage,
  CreditMessage,
  WelcomeOutput,
  ServerMessage,
} from './messages.js';
export { hostMessageSchemas, serverMessageSchemas, toolSpecSchema, MAX_CONTENT_BLOCKS } from './schemas.js';
export { type WireError, type Decoded, decodeHostMessage, decodeServerMessage, encodeMessage, checkToolSpec, formatAjvErrors } from './codec.js';
export { type WireBytes, toWire, fromWire, utf8 } from './bytes.js';
export { type Corkable, TickCoalescer, TurnCoalescer } from './coalesce.js';
export { type Capture, type PartialOutput, failureCapture, appendReason, headTail, HeadTailBuffer } from './capture.js';
export {
  type OutputFrame,
  OUTPUT_FRAME_KIND,
  MAX_OUTPUT_FRAME_SEQ,
  encodeOutputFrame,
  decodeOutputFrame,
  outputFrameHeaderBytes,
  outputFrameInPlace,
} from './output-frame.js';
export {
  type Traceparent,
  TRACEPARENT_PATTERN,
  MAX_TRACESTATE_LENGTH,
  CALL_ID_PATTERN,
  parseTraceparent,
  formatTraceparent,
  checkTracestate,
} from './trace-context.js';
