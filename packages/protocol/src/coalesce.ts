/**
 * Coalescing outgoing frames (performance, no change on the wire): {@link TickCoalescer} corks the
 * socket at the second frame written in a tick and uncorks it on `process.nextTick`, so the frames
 * written in the same tick — e.g. the results of all calls that arrived in one read — leave in few
 * `writev`s instead of one syscall each; {@link TurnCoalescer} corks it at the first frame of a turn
 * of the event loop and uncorks it on `setImmediate`, so the frames of every I/O callback of that
 * turn leave together. Neither holds a frame past the current turn; frames and their order are unchanged.
 */

/** The part of a socket (`net.Socket`, any `stream.Writable`) the coalescer uses. */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/** Largest frame that corks the socket, bytes (16 KiB); larger frames still join a batch already held. */
export const COALESCE_MAX_BYTES = 16 * 1024;

/**
 * Frames per batch (16): the batch is flushed when it is full and a new one starts, so the peer can
 * start on the first frames while the rest of the tick's frames are still being produced.
 */
export const COALESCE_MAX_FRAMES = 16;

/**
 * Corks one socket for the rest of the current tick, from the tick's second frame on: the first
 * frame of a tick goes out at once (a lone frame — one call in flight — gains nothing from waiting
 * and would only pay for the buffered write), the frames after it in the same tick leave together.
 * One per connection.
 */
export class TickCoalescer {
  readonly #socket: Corkable;
  /** A frame was written in this tick (reset by `#endTick`). */
  #busy = false;
  #corked = false;
  #frames = 0;
  readonly #endTick = (): void => {
    this.#busy = false;
    if (!this.#corked) return;
    this.#corked = false;
    this.#socket.uncork();
  };

  /** @param socket the connection's underlying socket (the one `ws` writes to) */
  constructor(socket: Corkable) {
    this.#socket = socket;
  }

  /**
   * Call right before writing a frame of about `bytes` bytes. The tick's first frame is not held;
   * from the second on the socket is corked until the next tick (once per tick), flushing every
   * {@link COALESCE_MAX_FRAMES} frames. Frames over {@link COALESCE_MAX_BYTES} do not cork it: for
   * them one syscall each costs nothing next to the copying, and holding them back only delays the peer.
   */
  hold(bytes: number): void {
    if (this.#corked) {
      if (++this.#frames > COALESCE_MAX_FRAMES) {
        this.#frames = 1;
        this.#socket.uncork(); // flush the full batch; this frame starts the next one
        this.#socket.cork();
      }
      return;
    }
    if (!this.#busy) {
      this.#busy = true;
      process.nextTick(this.#endTick);
      return;
    }
    if (bytes > COALESCE_MAX_BYTES) return;
    this.#corked = true;
    this.#frames = 1;
    this.#socket.cork();
  }

  /**
   * Cork the socket now, for the rest of the tick, before its first frame: for a caller that knows
   * several frames follow in this tick (a batch of calls that arrived together), so the first
   * leaves with the others instead of on its own. The frames then count towards
   * {@link COALESCE_MAX_FRAMES} as with {@link hold}. A no-op when already corked.
   */
  holdTick(): void {
    if (this.#corked) return;
    if (!this.#busy) {
      this.#busy = true;
      process.nextTick(this.#endTick);
    }
    this.#corked = true;
    this.#frames = 0;
    this.#socket.cork();
  }
}

/**
 * Corks one socket from the first frame written in a turn of the event loop until `setImmediate` —
 * the check phase of the same turn: the loop does not block for I/O while an immediate is pending —
 * so the frames written by every I/O callback of the turn leave in one `writev`. Where frames are
 * produced by several reads of other pipes or sockets in one turn (a tool host's results from its
 * MCP servers' output, each read one or two results), a per-tick coalescer sends each read's frames
 * on their own. Flushes every {@link COALESCE_MAX_FRAMES} frames; a frame over
 * {@link COALESCE_MAX_BYTES} does not start a batch (it joins one already held). One per connection;
 * {@link close} when the connection closed.
 */
export class TurnCoalescer {
  readonly #socket: Corkable;
  /** The pending flush while the socket is corked. */
  #immediate: NodeJS.Immediate | undefined;
  #frames = 0;
  readonly #flush = (): void => {
    this.#immediate = undefined;
    this.#socket.uncork(); // a no-op on a socket that ended or was destroyed meanwhile
  };

  /** @param socket the connection's underlying socket (the one `ws` writes to) */
  constructor(socket: Corkable) {
    this.#socket = socket;
  }

  /**
   * Call right before writing a frame of about `bytes` bytes: corks the socket until the end of
   * this turn unless it is already held, flushing every {@link COALESCE_MAX_FRAMES} frames.
   */
  hold(bytes: number): void {
    if (this.#immediate !== undefined) {
      if (++this.#frames > COALESCE_MAX_FRAMES) {
        this.#frames = 1;
        this.#socket.uncork(); // flush the full batch; this frame starts the next one
        this.#socket.cork();
      }
      return;
    }
    if (bytes > COALESCE_MAX_BYTES) return;
    this.#frames = 1;
    this.#socket.cork();
    this.#immediate = setImmediate(this.#flush);
  }

  /** Flush what is held now and cancel the pending flush (nothing is left scheduled). */
  close(): void {
    if (this.#immediate === undefined) return;
    clearImmediate(this.#immediate);
    this.#flush();
  }
}
