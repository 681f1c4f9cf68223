/** Reading a configuration file within a size limit (manifests, MCP configs). */
import { open } from 'node:fs/promises';

/**
 * The bytes of the file at `path`, reading at most `maxBytes + 1` of them: a file over the limit —
 * or one that never ends (`/dev/zero`, a pipe) — is refused before it fills memory.
 * @throws Error `larger than <maxBytes> bytes`, or the file system's error (ENOENT, EISDIR…)
 */
export async function readBounded(path: string, maxBytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    return buffer.subarray(0, length);
  } finally {
    await file.close();
  }
}
