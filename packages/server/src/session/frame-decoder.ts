/**
 * Decoding a host's frames without letting one frame hold the event loop: a frame up to
 * {@link INLINE_DECODE_BYTES} is decoded here (JSON.parse of 256 KiB, even of the densest JSON, is
 * a few milliseconds); a larger one is decoded in the offload worker, which sends back a bounded
 * result (an `advertise` prepared: at most `2 × maxToolsPerHost` entries, schema texts). A frame the
 * worker cannot decode within `decodeTimeoutMs`, or within its memory, is refused like a frame over
 * `maxPayload` (close 1009). Either way an `advertise` comes out prepared (`prepareAdvertise`).
 */
import { CloseCode, type Decoded, decodeHostMessage } from '@toolwire/protocol';
import type { AdvertiseCache } from '../registry/advertise-cache.js';
import { type PrepareLimits, prepareAdvertise } from '../registry/prepare.js';
import type { DecodeJob, DecodeReply, HostFrame } from '../worker/jobs.js';
import type { OffloadWorker } from '../worker/offload.js';

/** Largest frame decoded on the event loop, bytes. 256 KiB. */
export const INLINE_DECODE_BYTES = 256 * 1024;

/** What the decoder reads: the limits of preparing an advertise, and the worker's time per frame. */
export interface FrameDecoderOptions {
  limits: PrepareLimits;
  /** Time the worker may take to decode one frame, ms (`frameDecodeTimeoutMs`). */
  decodeTimeoutMs: number;
  /** Advertise frames already decoded and examined, by their bytes (identical frames of a fleet are examined once). */
  advertises?: AdvertiseCache;
}

/** A Uint8Array that owns its whole ArrayBuffer, so the buffer can be moved to the worker. */
function owned(data: Buffer): Uint8Array {
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer) return data;
  return new Uint8Array(data); // a copy of just these bytes
}

/** One per server; shared by its sessions (the worker decodes one frame at a time, in arrival order). */
export class FrameDecoder {
  readonly #options: FrameDecoderOptions;
  readonly #worker: OffloadWorker;

  constructor(options: FrameDecoderOptions, worker: OffloadWorker) {
    this.#options = options;
    this.#worker = worker;
  }

  /**
   * Decode one frame as ws delivered it. Synchronous for a small or binary frame; a promise (never
   * rejecting) for a large one, whose bytes are moved to the worker (`data` is unusable afterwards).
   */
  decode(data: Buffer, isBinary: boolean): Decoded<HostFrame> | Promise<Decoded<HostFrame>> {
    if (isBinary || data.byteLength <= INLINE_DECODE_BYTES) {
      const cache = isBinary ? undefined : this.#options.advertises;
      const key = cache?.keyOf(data);
      const known = key === undefined ? undefined : cache!.get(key);
      if (known !== undefined) return { ok: true, message: { type: 'advertise', prepared: known } };
      const decoded = decodeHostMessage(data, isBinary);
      if (!decoded.ok || decoded.message.type !== 'advertise') return decoded as Decoded<HostFrame>;
      const prepared = prepareAdvertise(decoded.message.tools, this.#options.limits);
      return { ok: true, message: { type: 'advertise', prepared: key === undefined ? prepared : cache!.set(key, prepared) } };
    }
    const bytes = owned(data);
    const job: Omit<DecodeJob, 'id'> = { kind: 'decode', data: bytes, limits: this.#options.limits };
    const timeoutMs = this.#options.decodeTimeoutMs;
    return this.#worker.run<DecodeReply>(job, timeoutMs, [bytes.buffer as ArrayBuffer]).then((outcome): Decoded<HostFrame> => {
      if (outcome.ok) return outcome.reply.frame;
      const why =
        outcome.failure === 'timeout'
          ? `not decoded within ${timeoutMs} ms`
          : outcome.failure === 'closed'
            ? 'server shutting down'
            : `the decoder failed: ${outcome.detail}`;
      return { ok: false, error: { fatal: true, closeCode: CloseCode.MESSAGE_TOO_BIG, reason: `frame of ${bytes.byteLength} bytes refused: ${why}` } };
    });
  }
}
