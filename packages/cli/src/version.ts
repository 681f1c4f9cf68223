/** The `@toolwire/cli` package version, for `toolwire --version` and the MCP client name. */
import pkg from '../package.json' with { type: 'json' };

/** The package version, e.g. `0.1.0`. */
export const VERSION: string = pkg.version;
