/**
 * `@toolwire/server` — the toolwire server: the tool-host WebSocket endpoint, the router (the
 * `tools()`/`route()` seam), the executor, the MCP door and {@link ToolwireServer}, which puts them
 * on one port.
 *
 * @packageDocumentation
 */
export { ToolwireServer, type ToolwireServerOptions, type ListenInfo, type ServerTls, type CredentialsUpdate } from './toolwire-server.js';
export {
  Executor,
  type ExecutorDeps,
  type ExecuteRequest,
  type ExecuteResult,
  type CompletedResult,
  type Fallback,
} from './executor/executor.js';
export { GRANT_ALL, isGranted, type ToolControl, type ToolControlRequest, type ToolControlDecision } from './executor/gates.js';
export { type Projection, project } from './executor/projection.js';
export { type Envelope, envelope } from './executor/envelope.js';
export { McpDoor, type McpDoorDeps, type CallerAuthenticator } from './mcp/door.js';
export { DEADLINE_META, WORKSPACE_META, type CallerPrincipal, type ToolSource } from './mcp/caller.js';
export { OUTPUT_SCHEMA } from './mcp/tool-result.js';
export { Router, type HostInfo } from './router/router.js';
export { HostEndpoint, type HostEndpointDeps } from './endpoint/host-endpoint.js';
export { TokenTable, type Principal, type Role } from './auth/tokens.js';
export type { InjectedTool, RoutedCall, RoutedCapture, ToolInjection } from './seam.js';
export {
  resolveOptions,
  type ServerOptions,
  type ResolvedOptions,
  type HostCredential,
  type CallerCredential,
  type Naming,
  type Logger,
} from './options.js';
