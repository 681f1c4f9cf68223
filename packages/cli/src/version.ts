/** The `@toolwire/cli` package version, for `toolwire --version` and the MCP client name. */
import { createRequire } from 'node:module';

// `../package.json` is this package's manifest both from `src/` and from the built `dist/`.
const pkg = createRequire(import.meta.url)('../package.json') as { version: string };

/** The package version, e.g. `0.1.0`. */
export const VERSION: string = pkg.version;
