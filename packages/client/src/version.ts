/** Host software name and version, sent in `hello.software` (free text for the server's logs). */
import { createRequire } from 'node:module';

// `../package.json` is this package's manifest both from `src/` and from the built `dist/`.
const pkg = createRequire(import.meta.url)('../package.json') as { name: string; version: string };

/** E.g. `@toolwire/client 0.1.0`. */
export const SOFTWARE = `${pkg.name} ${pkg.version}`;

/** This package's version, e.g. `0.1.0` (the MCP client's `clientInfo.version`). */
export const SOFTWARE_VERSION = pkg.version;
