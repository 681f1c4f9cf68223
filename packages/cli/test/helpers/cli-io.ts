/** Injected streams, environment and signals for CLI command tests, with captured output. */
import { EventEmitter } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import type { CliIO } from '../../src/io.js';

export interface TestIO extends CliIO {
  out(): string;
  err(): string;
  outBytes(): Buffer;
  signals: EventEmitter & CliIO['signals'];
}

/** A CliIO whose stdout/stderr are captured; `env` is exactly `env` (no credentials file unless TOOLWIRE_HOME says so). */
export function testIO(env: NodeJS.ProcessEnv, stdin: string | Buffer = ''): TestIO {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const outChunks: Buffer[] = [];
  const errChunks: Buffer[] = [];
  stdout.on('data', (c: Buffer) => outChunks.push(c));
  stderr.on('data', (c: Buffer) => errChunks.push(c));
  return {
    stdout,
    stderr,
    stdin: Readable.from([Buffer.from(stdin)]),
    env,
    signals: new EventEmitter(),
    out: () => Buffer.concat(outChunks).toString('utf8'),
    err: () => Buffer.concat(errChunks).toString('utf8'),
    outBytes: () => Buffer.concat(outChunks),
  };
}
