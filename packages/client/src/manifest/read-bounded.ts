/**
 * Reading a configuration file within a size limit and a time bound (manifests, MCP configs). The
 * file is opened without waiting for a writer (`O_NONBLOCK`), so a FIFO is never waited on at open;
 * a FIFO or pipe (`--manifest <(cat m.json)`, `/dev/stdin` fed by a pipe) is read as its writer
 * writes, up to the limit and the wait bound.
 */
import { close, constants, fstat, open, read } from 'node:fs';
import { Socket } from 'node:net';
import { promisify } from 'node:util';

const openFd = promisify(open);
const fstatFd = promisify(fstat);
const readFd = promisify(read);
const closeFd = promisify(close);

/** How long a pipe's writer may take to write the whole file and close it, ms. 10 s. */
export const PIPE_WAIT_MS = 10_000;

/**
 * The bytes of the file at `path`, reading at most `maxBytes + 1` of them: a regular file over the
 * limit is refused by its size unread, and one that never ends (`/dev/zero`, a pipe that keeps
 * writing) is refused at `maxBytes + 1` bytes read, before it fills memory. A FIFO or pipe is read
 * until its writer closes it: one that no process holds open for writing is refused at once,
 * one whose writer does not finish within `waitMs` is refused then.
 *
 * @param maxBytes the largest file taken, bytes
 * @param waitMs bound on reading a FIFO or pipe, ms; default {@link PIPE_WAIT_MS} (10 s)
 * @throws Error `larger than <maxBytes> bytes`, `a FIFO or pipe that no process writes to (nothing
 *   to read)`, `its writer did not finish within <waitMs> ms`, or the file system's error (ENOENT, EISDIR…)
 */
export async function readBounded(path: string, maxBytes: number, waitMs = PIPE_WAIT_MS): Promise<Buffer> {
  // A plain descriptor, not a FileHandle: for a FIFO it is handed to a socket, which then closes it.
  const fd = await openFd(path, constants.O_RDONLY | constants.O_NONBLOCK);
  let owned = true;
  try {
    const st = await fstatFd(fd);
    if (st.isFIFO()) {
      // One read first: 0 bytes means no process has it open for writing (poll(2) would not say so).
      const first = await readNow(fd, Math.min(maxBytes + 1, 64 * 1024));
      if (first !== undefined && first.length === 0) throw new Error(NO_WRITER);
      if (first !== undefined && first.length > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
      const socket = new Socket({ fd, readable: true, writable: false });
      owned = false; // the socket closes it
      return await readPipe(socket, first ?? Buffer.alloc(0), maxBytes, waitMs);
    }
    if (st.isFile() && st.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await readFd(fd, buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    return buffer.subarray(0, length);
  } finally {
    if (owned) await closeFd(fd);
  }
}

const NO_WRITER = 'a FIFO or pipe that no process writes to (nothing to read)';

/** What one read of the non-blocking `fd` gives now, or `undefined` when nothing is there yet (EAGAIN). */
async function readNow(fd: number, size: number): Promise<Buffer | undefined> {
  const buffer = Buffer.allocUnsafe(size);
  try {
    const { bytesRead } = await readFd(fd, buffer, 0, size, null);
    return buffer.subarray(0, bytesRead);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return undefined;
    throw error;
  }
}

/**
 * Read the rest of a FIFO or pipe through `socket`, which holds its descriptor (event-driven: no
 * thread waits in `read(2)`); `first` is what was read already. Settles once, and destroys the socket
 * (closing the descriptor) and clears its timer whatever happens.
 */
function readPipe(socket: Socket, first: Buffer, maxBytes: number, waitMs: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [first];
    let length = first.length;
    let settled = false;
    const settle = (error: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error !== undefined) reject(error);
      else resolve(Buffer.concat(chunks, length)); // empty when its writer wrote nothing: like an empty file
    };
    const timer = setTimeout(() => settle(new Error(`its writer did not finish within ${waitMs} ms`)), waitMs);
    socket.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > maxBytes) settle(new Error(`larger than ${maxBytes} bytes`));
      else chunks.push(chunk);
    });
    socket.once('end', () => settle(undefined));
    socket.once('error', (error) => settle(error));
  });
}
