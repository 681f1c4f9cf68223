/**
 * Node flags that run this repository's TypeScript from `src` without a build: the
 * `@toolwire/source` export condition resolves each workspace package to its `src/index.ts`
 * (instead of `dist/`), and tsx loads `.ts` files. Every `node` process that tests, benches, the soak
 * run and `pnpm start` spawn from source starts with these (the root `package.json` scripts pass the
 * same flags).
 */
export const SOURCE_NODE_ARGS: readonly string[] = ['--conditions=@toolwire/source', '--import', 'tsx'];
