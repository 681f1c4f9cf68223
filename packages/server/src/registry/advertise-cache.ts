/**
 * Prepared advertises by the exact bytes of their frame. The hosts of a fleet send the same
 * `advertise` frame (one manifest on many machines): decoding it (JSON, the frame's shape) and the
 * cheap checks of each tool (`prepareAdvertise`) give the same answer for the same bytes under the
 * same limits, so a frame seen before is answered from here and only the per-host steps (names,
 * schema compile outcome, registry) run again. A frame that differs by one byte is decoded and
 * examined on its own; a frame that does not decode, or is not an `advertise`, is never kept.
 *
 * Bounded: least recently used first out, past `maxBytes` of frame text (the prepared form kept
 * beside it is of the same order) or {@link MAX_CACHED_ADVERTISES} frames. The prepared advertise
 * is shared by every session that sent those bytes and is never mutated (its entries are frozen).
 */
import type { PreparedAdvertise } from './prepare.js';

/** Distinct advertise frames kept at most, whatever their size. */
export const MAX_CACHED_ADVERTISES = 64;

/** What a protocol encoder (`encodeMessage`) puts first in an advertise frame; other frames are not looked up. */
const PREFIX = Buffer.from('{"type":"advertise"', 'latin1');

/** A frame's bytes as a map key: one character per byte (exact, and no UTF-8 decoding). */
export type FrameKey = string;

export class AdvertiseCache {
  readonly #maxBytes: number;
  readonly #byFrame = new Map<FrameKey, PreparedAdvertise>();
  #bytes = 0;

  /** @param maxBytes frame text kept at most, bytes (`ToolwireServerOptions.advertiseCacheBytes`); 0 keeps nothing */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Frames kept now, and their bytes (for tests). */
  get stats(): { frames: number; bytes: number } {
    return { frames: this.#byFrame.size, bytes: this.#bytes };
  }

  /**
   * The key of a text frame that starts as an encoded `advertise` and could be kept, or `undefined`
   * (any other frame: nothing is allocated for it).
   */
  keyOf(data: Buffer): FrameKey | undefined {
    const n = PREFIX.length;
    if (data.length > this.#maxBytes || data.length <= n || data[9] !== 0x61 /* a */ || data.compare(PREFIX, 0, n, 0, n) !== 0) return undefined;
    return data.toString('latin1');
  }

  /** The advertise prepared from the frame of `key` (marked most recently used), or `undefined`. */
  get(key: FrameKey): PreparedAdvertise | undefined {
    const known = this.#byFrame.get(key);
    if (known === undefined) return undefined;
    this.#byFrame.delete(key);
    this.#byFrame.set(key, known);
    return known;
  }

  /** Keep `prepared`, the advertise of the frame of `key` (as decoded and examined under this server's limits). */
  set(key: FrameKey, prepared: PreparedAdvertise): PreparedAdvertise {
    if (key.length > this.#maxBytes) return prepared;
    const frozen: PreparedAdvertise = Object.freeze({
      entries: Object.freeze(prepared.entries.map((e) => Object.freeze(e))) as PreparedAdvertise['entries'],
      unexamined: prepared.unexamined,
    });
    const old = this.#byFrame.get(key);
    if (old !== undefined) {
      this.#byFrame.delete(key);
      this.#bytes -= key.length;
    }
    this.#byFrame.set(key, frozen);
    this.#bytes += key.length;
    for (const oldest of this.#byFrame.keys()) {
      if (this.#bytes <= this.#maxBytes && this.#byFrame.size <= MAX_CACHED_ADVERTISES) break;
      this.#byFrame.delete(oldest);
      this.#bytes -= oldest.length;
    }
    return frozen;
  }
}
