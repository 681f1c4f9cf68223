/**
 * The process surface the CLI commands use, injectable for tests: standard streams, environment,
 * and the source of SIGINT/SIGTERM/SIGHUP.
 */
import type { Readable, Writable } from 'node:stream';

/** Where signals come from (`process` fits). */
export interface SignalSource {
  once(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  /** SIGHUP: `toolwire host` re-reads its manifest. */
  on(event: 'SIGHUP', listener: () => void): unknown;
  off(event: 'SIGINT' | 'SIGTERM' | 'SIGHUP', listener: () => void): unknown;
}

/** Streams, environment and signals of one CLI invocation. Default: the current process's. */
export interface CliIO {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  signals: SignalSource;
}

/** The current process's streams, environment and signals. */
export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, signals: process };
}

/** Write `data` and wait until it is handed to the OS (so an exit right after loses nothing). */
export function write(stream: Writable, data: string | Uint8Array): Promise<void> {
  if (data.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    stream.write(data, () => resolve());
  });
}

/** Read all of `stream` as UTF-8, at most `maxBytes`; rejects with a RangeError when longer. */
export async function readAll(stream: Readable, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buf.length;
    if (total > maxBytes) throw new RangeError(`input is longer than ${maxBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Set once a {@link waitForSignal} listener got SIGINT or SIGTERM. */
let stopRequested = false;

/**
 * True once SIGINT or SIGTERM reached a {@link waitForSignal} listener in this process: the user
 * asked it to stop, so its exit must not wait for a reader that stopped reading (see `main.ts`).
 */
export function stopSignalled(): boolean {
  return stopRequested;
}

/** Resolves with the first of SIGINT/SIGTERM; `dispose()` removes the listeners. */
export function waitForSignal(signals: SignalSource): { signal: Promise<'SIGINT' | 'SIGTERM'>; dispose(): void } {
  let onInt!: () => void;
  let onTerm!: () => void;
  const signal = new Promise<'SIGINT' | 'SIGTERM'>((resolve) => {
    onInt = () => {
      stopRequested = true;
      resolve('SIGINT');
    };
    onTerm = () => {
      stopRequested = true;
      resolve('SIGTERM');
    };
  });
  signals.once('SIGINT', onInt);
  signals.once('SIGTERM', onTerm);
  return {
    signal,
    dispose() {
      signals.off('SIGINT', onInt);
      signals.off('SIGTERM', onTerm);
    },
  };
}
