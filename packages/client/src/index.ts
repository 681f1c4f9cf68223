/**
 * `@toolwire/client` — the tool host: connect to a toolwire server, advertise tools, run calls
 * (in-process handlers, manifest subprocess tools and MCP servers) with cancel and deadline handling. This index
 * is the public API; everything else in `src/` is internal.
 *
 * @packageDocumentation
 */
export { ToolHost } from './host/tool-host.js';
export type { ToolHostEvents } from './host/events.js';
export type { ToolSetChange } from './host/tool-set.js';
export type { ToolHostOptions } from './host/options.js';
export type { ToolContext, ToolHandler, InProcessToolSpec, CommandSpec, CommandToolSpec, Logger } from './types.js';
export { HostReplacedError, ServerRefusedError, TokenRefusedError, type RefusalKind } from './host/errors.js';
export { CallAborted, type AbortFailure } from './calls/abort.js';
export { loadManifest, MAX_MANIFEST_BYTES } from './manifest/load.js';
export { ManifestError } from './manifest/errors.js';
export { type McpServerConfig, McpDefaults } from './sources/mcp/config.js';
export { loadManifestAndServers, loadMcpConfig } from './sources/mcp/load.js';
export { checkExecutable, type CheckExecutableOptions } from './manifest/executable.js';
export { type Capture, ExitCode, type ExitCodeValue } from '@toolwire/protocol';
