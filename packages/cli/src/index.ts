/**
 * `@toolwire/cli` — the `toolwire` command line (`serve`, `host`, `tools`, `call`, `token`, `status`) as functions, for
 * embedding and tests. Each takes the arguments after the command name and resolves with the
 * process exit status; none calls `process.exit`. The `toolwire` binary is `main.ts`.
 *
 * @packageDocumentation
 */
export { run } from './dispatch.js';
export { serveCommand, type ServeIo } from './commands/serve.js';
export { hostCommand, type HostCommandDeps } from './commands/host.js';
export { toolsCommand } from './commands/tools.js';
export { callCommand, type CallCommandDeps } from './commands/call.js';
export { tokenCommand, type TokenIo } from './commands/token.js';
export { statusCommand } from './commands/status.js';
export { type CliIO, type SignalSource, processIO } from './io.js';
export { type LocalCredentials, credentialsPath, readLocalCredentials, toolwireHome } from './credentials.js';
export { VERSION } from './version.js';
