/**
 * A tool's pipes once the spawn helper handed them over (`spawn-helper.ts`): once a tool has output
 * 256 KiB the helper sends its two pipe handles, and they are read in this process from then on
 * (one process and one copy fewer per byte); the read bound of the call's live-output window is
 * then kept here.
 */
import { type OnReadOpts, Socket, type SocketConstructorOpts } from 'node:net';
import type { ToolEvents } from './tool-process.js';

/**
 * What the pipes handed over by the helper are read into (64 KiB: a Linux pipe's default size, the
 * most one read returns): one buffer for every pipe of this process, since each read is copied out
 * (`ToolEvents.data`'s `reused`) before the event loop reads again. A new buffer per read is memory
 * V8 counts as external, and at streaming rates that starts a full garbage collection every few
 * dozen MiB.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

/** The helper hands over one pipe of a tool (sent alone, with the pipe's handle). */
export interface PipeEvent {
  ev: 'pipe';
  id: number;
  fd: 1 | 2;
}

/** A tool's pipes once the helper handed them over: read here. */
export interface Passed {
  sockets: Socket[];
  /** Pipes not closed yet (of 2). */
  open: number;
}

/** What reading a handed-over pipe needs of its call (the helper's record of it). */
export interface PipedCall {
  events: ToolEvents;
  closed?: boolean;
  /** Output bytes the tool may still output (its allowance less what arrived), `undefined`: no bound. */
  left: number | undefined;
  /** Its pipes, once the helper handed them over. */
  passed?: Passed;
}

/**
 * One pipe of a tool (its bare handle), handed over by the helper after every `data` event it read:
 * read here from now on, into {@link READ_BUFFER} (each read is copied out before the next one).
 * `remote` is the call it belongs to (`undefined`: released meanwhile, the pipe is destroyed);
 * `live` tells whether that call is still carried (a read or close after that is dropped).
 */
export function readPassedPipe(m: PipeEvent, handle: object, remote: PipedCall | undefined, live: () => boolean): void {
  const passed = remote === undefined ? undefined : (remote.passed ??= { sockets: [], open: 2 });
  // Returns true: the pipes are paused (both) by `pause()` when the allowance is used up.
  const onread = (nread: number, buffer: Uint8Array): boolean => {
    if (remote === undefined || !live()) return true;
    if (remote.left !== undefined) {
      remote.left -= nread;
      if (remote.left <= 0) for (const s of passed!.sockets) s.pause();
    }
    remote.events.data(m.fd, buffer.subarray(0, nread), true);
    return true;
  };
  // As child_process makes a socket of a received pipe handle, with the read buffer of its own.
  const options: SocketConstructorOpts & { handle: object; onread: OnReadOpts } = { handle, readable: true, onread: { buffer: READ_BUFFER, callback: onread } };
  const socket = new Socket(options);
  socket.on('error', () => {}); // a destroyed pipe; the capture keeps what arrived
  if (remote === undefined || passed === undefined) {
    socket.destroy(); // released meanwhile
    return;
  }
  passed.sockets.push(socket);
  if (remote.left !== undefined && remote.left <= 0) socket.pause();
  socket.on('close', () => {
    if (--passed.open !== 0 || !live()) return;
    remote.closed = true;
    remote.events.closed();
  });
}
