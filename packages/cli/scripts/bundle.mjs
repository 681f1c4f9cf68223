/**
 * Bundles the `toolwire` binary: `src/main.ts` and the toolwire packages it uses (from their built
 * `dist/`) into one CommonJS file, `dist/toolwire.cjs`, next to a copy of the client's spawn helper
 * and the server's offload worker (`dist/offload-worker.cjs`, bundled the same way), and the
 * server's status page files (`dist/page/`).
 *
 * Why CommonJS and one file: a process that never starts Node's ESM loader and reads one file
 * instead of dozens starts faster and stays smaller (bench/README.md, "CLI start-up and packaging").
 * Third-party packages stay external (installed as this package's dependencies) except the ESM-only
 * ones, which CommonJS cannot `require` on Node 20 and which are bundled.
 *
 * Run by `pnpm build` after `tsc`, once the other packages are built.
 */
import { copyFileSync, cpSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const cliDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const packagesDir = join(cliDir, '..');
/** ESM-only dependencies: bundled. */
const ESM_ONLY = new Set(['p-timeout', 'nanoid']);

const manifest = (pkg) => JSON.parse(readFileSync(join(packagesDir, pkg, 'package.json'), 'utf8'));
const runtimeDeps = (m) => Object.keys({ ...m.dependencies, ...m.optionalDependencies });
const cli = manifest('cli');
const external = new Set();
for (const pkg of ['protocol', 'server', 'client', 'cli']) {
  for (const dep of runtimeDeps(manifest(pkg))) if (!dep.startsWith('@toolwire/') && !ESM_ONLY.has(dep)) external.add(dep);
}
// `ws` loads these when present (optional native speed-ups).
external.add('bufferutil').add('utf-8-validate');
// The bundle requires each external from this package's own node_modules: each must be a dependency here.
const own = new Set(runtimeDeps(cli));
const missing = [...external].filter((dep) => !own.has(dep) && dep !== 'utf-8-validate');
if (missing.length > 0) throw new Error(`packages/cli/package.json must depend on ${missing.join(', ')} (external to the bundle)`);

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: [...external],
  // `import.meta.url` of every bundled module becomes the bundle's own URL: the paths built from it
  // (`../package.json`, `./spawn-helper.cjs`, `./offload-worker.cjs`) are laid out to match next to
  // `dist/toolwire.cjs`.
  define: { 'import.meta.url': '__toolwire_bundle_url' },
  banner: { js: "const __toolwire_bundle_url = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
};
await build({ ...common, entryPoints: [join(cliDir, 'src', 'main.ts')], outfile: join(cliDir, 'dist', 'toolwire.cjs') });
// The server's offload worker thread (large frames, schema compiles) runs its own file.
await build({ ...common, entryPoints: [join(packagesDir, 'server', 'dist', 'worker', 'offload-worker.js')], outfile: join(cliDir, 'dist', 'offload-worker.cjs') });
copyFileSync(join(packagesDir, 'client', 'src', 'subprocess', 'spawn-helper.cjs'), join(cliDir, 'dist', 'spawn-helper.cjs'));
// The server's status page script and style (`status/pages.ts` reads `./page/<name>` next to the bundle).
cpSync(join(packagesDir, 'server', 'src', 'status', 'page'), join(cliDir, 'dist', 'page'), { recursive: true });
