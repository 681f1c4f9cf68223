import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Tests run from src: workspace packages resolve through their `@toolwire/source` export condition
  // (no build needed). Tests run in vitest's node (SSR) environment, so this is `ssr.resolve.conditions`;
  // vitest appends its own defaults (`node`, `development|production`) to this list.
  ssr: { resolve: { conditions: ['@toolwire/source'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'packages/*/examples/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
