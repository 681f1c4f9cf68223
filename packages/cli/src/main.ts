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
import { stopSignalled } from './io.js';

/**
 * After SIGINT or SIGTERM, how long the exit waits for stdout/stderr to drain, ms: Ctrl-C exits at
 * once (README), even when the reader of a pipe stopped reading (`toolwire call … | stuck`).
 */
const SIGNALLED_DRAIN_MS = 500;

/** Resolves once what was written to `stream` so far has been handed to the OS. */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise<void>((resolve) => stream.write('', () => resolve()));
}

/**
 * Let stdout/stderr drain before exiting so a large capture is not cut short — without a bound,
 * unless a stop signal arrived: then at most {@link SIGNALLED_DRAIN_MS}.
 */
async function exit(code: number): Promise<never> {
  const both = Promise.all([drained(process.stdout), drained(process.stderr)]);
  if (stopSignalled()) await Promise.race([both, new Promise<void>((resolve) => setTimeout(resolve, SIGNALLED_DRAIN_MS).unref())]);
  else await both;
  process.exit(code);
}

// No top-level await: the installed binary is this file bundled as CommonJS (scripts/bundle.mjs).
void run(process.argv.slice(2)).then(exit);
