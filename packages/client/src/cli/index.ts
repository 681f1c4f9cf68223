/**
 * The `toolwire host|tools|call` commands (`@toolwire/client/cli`). Each takes the arguments after
 * the command name and resolves with the process exit status; none calls `process.exit`.
 *
 * @packageDocumentation
 */
export { hostCommand, hostUsage, type HostCommandDeps } from './host.js';
export { toolsCommand, toolsUsage, toolLine } from './tools.js';
export { callCommand, callUsage, REQUEST_MARGIN_MS, RESPONSE_MARGIN_MS, type CallCommandDeps } from './call.js';
export { mcpUrl, DEFAULT_CONNECT_TIMEOUT_MS } from './mcp.js';
export { type CliIO, type SignalSource, processIO } from './io.js';
