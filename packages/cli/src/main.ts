#!/usr/bin/env node
/**
 * `toolwire` — one command line for the whole system:
 *
 *   toolwire serve [--listen HOST:PORT] [--config FILE]         run the central server
 *   toolwire host  --server URL --token T --manifest FILE       run a tool host
 *   toolwire tools --server URL --token T [--json]              list the tools
 *   toolwire call NAME [INPUT_JSON] --server URL --token T [--timeout MS]
 *
 * `TOOLWIRE_SERVER` and `TOOLWIRE_TOKEN` stand in for `--server` and `--token`; without either, the
 * local credentials file written by `toolwire serve` is used. Exit status: see README "Failure semantics".
 */
import { run } from './dispatch.js';

/** Let stdout/stderr drain before exiting so a large capture is not cut short. */
async function exit(code: number): Promise<never> {
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
  process.exit(code);
}

// No top-level await: the installed binary is this file bundled as CommonJS (scripts/bundle.mjs).
void run(process.argv.slice(2)).then(exit);
