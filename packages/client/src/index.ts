/**
 * `@toolwire/client` — the tool host: connect to a toolwire server, advertise tools, run calls
 * (in-process handlers and manifest subprocess tools) with cancel and deadline handling.
 *
 * @packageDocumentation
 */
export { ToolHost, type ToolHostEvents } from './host/tool-host.js';
export { HostReplacedError } from './host/errors.js';
export type { ToolHostOptions } from './host/options.js';
export type { ToolContext, ToolHandler, InProcessToolSpec, CommandSpec, CommandToolSpec, Logger } from './types.js';
export { CallAborted, type AbortFailure } from './calls/abort.js';
export { captureCapBytes } from './calls/capture-cap.js';
export { runCommandTool, toolEnv, type RunCommandOptions } from './subprocess/run-command.js';
export { loadManifest, MAX_MANIFEST_BYTES } from './manifest/load.js';
export { parseManifest, type ParseManifestOptions } from './manifest/parse.js';
export { ManifestError } from './manifest/errors.js';
export { fullJitterDelay } from './connection/backoff.js';
export { SOFTWARE } from './version.js';
