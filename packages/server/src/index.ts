/**
 * `@toolwire/server` — the toolwire server: {@link ToolwireServer} puts the tool-host WebSocket
 * endpoint, the router (the `tools()`/`route()` seam), the executor and the MCP door on one port.
 * This index is the public API; everything else in `src/` is internal.
 *
 * @packageDocumentation
 */
export { ToolwireServer, type ListenInfo, type CredentialsUpdate } from './toolwire-server.js';
export { ServerDefaults } from './defaults.js';
export type { ToolwireServerOptions, ServerTls, HostCredential, CallerCredential, Naming, Logger } from './options.js';
export type { InjectedTool, OutputChunk, OutputListener, ProgressListener, RoutedCall, RoutedCapture, ToolInjection } from './seam.js';
export type { ExecuteRequest, ExecuteResult, CompletedResult, Fallback } from './executor/request.js';
export type { Projection } from './executor/projection.js';
export type { Envelope } from './executor/envelope.js';
export type { ToolControl, ToolControlRequest, ToolControlDecision } from './executor/gates.js';
export type { HostInfo } from './router/listing.js';
export type { StatusSnapshot, HostStatus, ToolStatus, CallStatus } from './status/snapshot.js';
export type { FinishedCall } from './status/call-board.js';
export { generateToken } from './auth/generate-token.js';
export { ClusterError } from './cluster/errors.js';
export { RecordDirError } from './executor/record.js';
export type { ClusterOptions, NatsCredentials, NatsTls } from './cluster/options.js';
export { DEADLINE_META, WORKSPACE_META } from './mcp/caller.js';
export { OUTPUT_NOTIFICATION, STREAM_META } from './mcp/live-output.js';
export { argumentsAsSent } from './mcp/raw-body.js';
export { ExitCode, type ExitCodeValue, CloseCode, type CloseCodeValue } from '@toolwire/protocol';
