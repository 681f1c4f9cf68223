/**
 * Reading a file the operator names (a token file, the credentials file, a TLS PEM file) without
 * being stalled or flooded by it: a FIFO is opened without waiting for a writer (`O_NONBLOCK`) and
 * refused, as is any other file that is not a regular one (a device such as `/dev/zero`), and at most
 * `maxBytes + 1` bytes are read, so a file that grows after it was opened stays bounded.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** What {@link readRegularFile} refuses, apart from the file system's own errors. */
export type RegularFileProblem = 'not a regular file' | 'too large';

/**
 * The bytes of the regular file `path`, or the problem (nothing read past it). `checkMode`, when
 * given, sees its permission bits (`mode & 0o777`) once it is known to be a regular file, before its
 * size is judged, and may throw to refuse it.
 * @throws the file system's error (ENOENT, EACCES…) when it cannot be opened or read; what `checkMode` throws
 */
export async function readRegularFile(path: string, maxBytes: number, checkMode?: (mode: number) => void): Promise<Buffer | RegularFileProblem> {
  const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await file.stat();
    if (!st.isFile()) return 'not a regular file';
    checkMode?.(st.mode & 0o777);
    if (st.size > maxBytes) return 'too large';
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) return 'too large';
    return buffer.subarray(0, length);
  } finally {
    await file.close();
  }
}

const REASONS: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'it is a directory' };

/** A file system error of {@link readRegularFile} in words (`no such file`, …), else its code. */
export function fileErrorReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? 'error';
  return REASONS[code] ?? code;
}
