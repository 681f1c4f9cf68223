/** The `@toolwire/cli` package version, for `toolwire --version` and the MCP client name. */
import { readFileSync } from 'node:fs';

// `../package.json` is this package's manifest both from `src/` and from the built `dist/`. Read as a
// file: `createRequire` would start the CommonJS loader, which `toolwire --version` has no other use for.
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** The package version, e.g. `0.1.0`. */
export const VERSION: string = pkg.version;
