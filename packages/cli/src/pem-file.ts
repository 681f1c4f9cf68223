/**
 * Read a PEM file the operator names (`serve --tls-cert/--tls-key`, `host --ca`), bounded: a FIFO
 * is not waited on, a device such as `/dev/zero` or a file over {@link MAX_PEM_FILE_BYTES} is not
 * read, and a file without the expected PEM block is refused here, naming the flag, instead of
 * as an OpenSSL `no start line` later or a certificate "not trusted" at the first dial.
 */
import { fileErrorReason, readRegularFile } from './regular-file.js';

/** Longest PEM file read, bytes (1 MiB): a certificate chain or a key is a few KiB. */
export const MAX_PEM_FILE_BYTES = 1024 * 1024;

/** What the file must hold: a certificate (chain, or CA bundle) or a private key. */
export type PemKind = 'certificate' | 'private key';

const BLOCK: Record<PemKind, RegExp> = {
  certificate: /-----BEGIN (?:X509 |TRUSTED )?CERTIFICATE-----/,
  'private key': /-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----/,
};

/** A PEM file that cannot be used; the message names the flag and the file. Callers exit 64 (`USAGE`). */
export class PemFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PemFileError';
  }
}

/**
 * The bytes of the PEM file `path`.
 *
 * @param flag how the file was named, for messages (`--tls-cert`, `--ca`)
 * @param kind the PEM block it must hold
 * @throws PemFileError when it is missing or unreadable, not a regular file, over
 *   {@link MAX_PEM_FILE_BYTES}, holds no `-----BEGIN …` block of `kind`, or is an encrypted private key.
 */
export async function readPemFile(path: string, flag: string, kind: PemKind): Promise<Buffer> {
  const name = `${flag} ${path}`;
  let bytes: Buffer;
  try {
    const read = await readRegularFile(path, MAX_PEM_FILE_BYTES);
    if (read === 'not a regular file') throw new PemFileError(`${name} is not a regular file`);
    if (read === 'too large') throw new PemFileError(`${name} is over ${MAX_PEM_FILE_BYTES} bytes; a PEM ${kind} is a few KiB`);
    bytes = read;
  } catch (error) {
    if (error instanceof PemFileError) throw error;
    throw new PemFileError(`cannot read ${name}: ${fileErrorReason(error)}`);
  }
  if (!BLOCK[kind].test(bytes.toString('latin1')))
    throw new PemFileError(`${name} holds no PEM ${kind} (no "-----BEGIN …${kind === 'certificate' ? 'CERTIFICATE' : 'PRIVATE KEY'}-----" line)`);
  // Node cannot ask for a passphrase: OpenSSL would only say "bad decrypt".
  if (kind === 'private key' && /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(bytes.toString('latin1'))) {
    throw new PemFileError(
      `${name} is encrypted (a passphrase-protected key); write it unencrypted, readable by you only: (umask 077 && openssl pkey -in ${path} -out server.key)`,
    );
  }
  return bytes;
}
