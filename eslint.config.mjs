// @ts-check
// ESLint flat config. `pnpm lint` runs it; `pnpm check` runs it between the type check and the format check.
// Rules: ESLint's recommended set and typescript-eslint's type-checked recommended set (with type information from
// the TypeScript project service, so `no-floating-promises` and `no-misused-promises` see every promise), plus the
// package layering as import restrictions. Formatting is Prettier's job (`pnpm format`), so no stylistic rules here.
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const RELATIVE_ACROSS_PACKAGES = {
  regex: '^\\.{1,2}/(.*/)?(packages|src|test)(/|$)',
  message: 'Import another package by its name (@toolwire/...), never by a relative path into its folder.',
};

/** Rules for one package's src: it may not import the named @toolwire packages, statically or with import(). */
function layering(forbidden, message) {
  const names = forbidden.join('|');
  return {
    'no-restricted-imports': ['error', { patterns: [{ regex: `^@toolwire/(${names})(/|$)`, message }, RELATIVE_ACROSS_PACKAGES] }],
    'no-restricted-syntax': ['error', { selector: `ImportExpression[source.value=/^@toolwire[/](${names})([/]|$)/]`, message }],
  };
}

export default defineConfig(
  { ignores: ['**/node_modules/**', '**/dist/**', 'coverage/**', 'bench/results/**', '.toolwire/**', '**/*.generated.ts'] },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: globals.node },
  },
  eslint.configs.recommended,
  {
    rules: {
      // A `let` read by a closure before its one assignment (a callback that may run while the value is still being
      // made) must stay `let`: as a `const` that read would throw in the temporal dead zone.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests and benchmarks read untyped JSON off sockets and out of child processes, and their fakes implement async
    // interfaces with bodies that need no await: the `any` and `require-await` rules would only add casts there.
    files: ['packages/*/test/**/*.ts', 'packages/*/examples/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
  // Layering: protocol imports nothing of ours; server and client depend on protocol only and never on each other;
  // only the CLI and the testing kit import both.
  {
    files: ['packages/protocol/src/**'],
    rules: layering(['[^/]+'], '@toolwire/protocol holds wire concerns and imports no other @toolwire package.'),
  },
  {
    files: ['packages/server/src/**'],
    rules: layering(['client', 'cli'], '@toolwire/server depends on @toolwire/protocol only (only @toolwire/cli imports both sides).'),
  },
  {
    files: ['packages/client/src/**'],
    rules: layering(['server', 'cli'], '@toolwire/client depends on @toolwire/protocol only (only @toolwire/cli imports both sides).'),
  },
  {
    files: ['packages/testing/src/**'],
    rules: layering(['cli'], '@toolwire/testing puts a server and tool hosts in a test: it depends on server, client and protocol, never on the CLI.'),
  },
  {
    files: ['packages/cli/src/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [RELATIVE_ACROSS_PACKAGES] }] },
  },
  // The status page's script runs in the browser (served as it is, no build step).
  {
    files: ['packages/server/src/status/page/**/*.js'],
    languageOptions: { sourceType: 'script', globals: globals.browser },
  },
);
