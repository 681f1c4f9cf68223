/**
 * Read a host token from a file (`toolwire host --token-file FILE`, `$TOOLWIRE_TOKEN_FILE`), so the
 * token never has to be on a command line (`ps`) or in the environment.
 */
import { ExitCode } from '@toolwire/protocol';
import { fileErrorReason, readRegularFile } from './regular-file.js';

/** Longest token file read, bytes; a token is a short line. */
export const MAX_TOKEN_FILE_BYTES = 64 * 1024;

/** What a token cannot hold (it travels as `Authorization: Bearer <token>`): whitespace, control characters, characters past U+00FF. */
// eslint-disable-next-line no-control-regex
export const UNSENDABLE_TOKEN = /[\s\u0000-\u001f\u007f]|[^\u0000-\u00ff]/;

/** A token file that cannot be used; `exitCode` is 66 (`NO_INPUT`) or 77 (`NO_PERM`). The message never holds the token. */
export class TokenFileError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'TokenFileError';
  }
}

/**
 * The token in `path`: its text without one trailing newline (`\n` or `\r\n`).
 *
 * @param from how the file was named, for messages: `--token-file` or `$TOOLWIRE_TOKEN_FILE`
 * @throws TokenFileError 77 (`NO_PERM`) when group or others may read or write the file (mode & 0o077;
 *   the fix is `chmod 600 FILE`); 66 (`NO_INPUT`) when it is missing, unreadable, not a regular
 *   file (a FIFO is not waited on), over {@link MAX_TOKEN_FILE_BYTES}, empty, or its token holds
 *   whitespace or a control character ({@link UNSENDABLE_TOKEN}).
 */
export async function readTokenFile(path: string, from: string): Promise<string> {
  const name = `${from} ${path}`;
  let text: string;
  try {
    const read = await readRegularFile(path, MAX_TOKEN_FILE_BYTES, (mode) => {
      if ((mode & 0o077) === 0) return;
      const octal = mode.toString(8).padStart(4, '0');
      throw new TokenFileError(`token file ${name} has mode ${octal}: group or others may read or write it; run: chmod 600 ${path}`, ExitCode.NO_PERM);
    });
    if (read === 'not a regular file') throw new TokenFileError(`token file ${name} is not a regular file`, ExitCode.NO_INPUT);
    if (read === 'too large') throw new TokenFileError(`token file ${name} is over ${MAX_TOKEN_FILE_BYTES} bytes`, ExitCode.NO_INPUT);
    text = read.toString('utf8');
  } catch (error) {
    if (error instanceof TokenFileError) throw error;
    throw new TokenFileError(`cannot read token file ${name}: ${fileErrorReason(error)}`, ExitCode.NO_INPUT);
  }
  const token = text.replace(/\r?\n$/, '');
  if (token.length === 0) throw new TokenFileError(`token file ${name} is empty`, ExitCode.NO_INPUT);
  if (UNSENDABLE_TOKEN.test(token)) {
    throw new TokenFileError(
      `token file ${name} holds whitespace or a control character inside its token (a token is one line of visible characters)`,
      ExitCode.NO_INPUT,
    );
  }
  return token;
}
