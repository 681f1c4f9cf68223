/** Host software name and version, sent in `hello.software` (free text for the server's logs). */
import pkg from '../package.json' with { type: 'json' };

/** E.g. `@toolwire/client 0.1.0`. */
export const SOFTWARE = `${pkg.name} ${pkg.version}`;
