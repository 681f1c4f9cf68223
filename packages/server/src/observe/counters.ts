/**
 * Event counts the host sessions of one server keep for `/metrics` (issue 16): plain numbers
 * bumped where the event happens and read at scrape time, so a frame costs an addition, not a
 * metrics-library call. One per server (`SessionOptions.counters`).
 */

/** Why a host's frame was refused (each one a protocol violation, DESIGN §6: the call or session ends 76). A closed set: the `kind` label of `toolwire_frames_refused`. */
export const REFUSED_FRAME_KINDS = [
  /** Not JSON, binary, over `maxPayload`, or no `type` (fatal: the session closes). */
  'undecodable',
  /** A known `type` with the wrong shape. */
  'wrong_shape',
  /** A frame out of order: before `hello`, a second `hello`. */
  'out_of_order',
  /** Live output that breaks the window, the sequence or `result.streamed`. */
  'output_protocol',
  /** More than `maxBadFrames` wrong-shape frames, or more frames waiting than the inbox holds. */
  'flood',
] as const;

/** One of {@link REFUSED_FRAME_KINDS}. */
export type RefusedFrameKind = (typeof REFUSED_FRAME_KINDS)[number];

/** Counts of host-session events since the server started. */
export class SessionCounters {
  /** Frames refused, by kind. */
  readonly framesRefused: Record<RefusedFrameKind, number> = { undecodable: 0, wrong_shape: 0, out_of_order: 0, output_protocol: 0, flood: 0 };
  /** Sessions terminated because no pong came within a heartbeat. */
  heartbeatTerminations = 0;
  /** Bytes of frames received from hosts (WebSocket payloads). */
  bytesIn = 0;
  /** Characters of frames sent to hosts (JSON text; equal to bytes for ASCII). */
  bytesOut = 0;
  refused(kind: RefusedFrameKind): void {
    this.framesRefused[kind] += 1;
  }
}
