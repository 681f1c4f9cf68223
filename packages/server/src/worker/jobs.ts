/**
 * The messages between the event loop and the offload worker (`offload-worker.ts`). A reply carries
 * the `id` of its job.
 */
import type { AdvertiseMessage, Decoded, HostMessage, OutputFrame } from '@toolwire/protocol';
import type { PrepareLimits, PreparedAdvertise } from '../registry/prepare.js';

/**
 * JSON values one frame decoded off the event loop may hold (an advertise's entries past those
 * examined not counted); more → close 1009. Parsing a million small values takes the worker about a
 * second; a frame decoded on the event loop (256 KiB at most) holds fewer than 131,072.
 */
export const MAX_FRAME_VALUES = 1_000_000;

/** An `advertise` after preparing (bounded entries, cheap checks done), in place of its raw tools. */
export interface AdvertiseFrame {
  type: 'advertise';
  prepared: PreparedAdvertise;
}

/** A binary `output` frame (protocol 2), decoded; its bytes are a view of the frame. */
export interface ChunkFrame extends OutputFrame {
  type: 'chunk';
}

/** A decoded host frame as the session handles it. */
export type HostFrame = Exclude<HostMessage, AdvertiseMessage> | AdvertiseFrame | ChunkFrame;

/** Decode one frame (its bytes moved to the worker). */
export interface DecodeJob {
  kind: 'decode';
  id: number;
  data: Uint8Array;
  limits: PrepareLimits;
}

export interface DecodeReply {
  id: number;
  frame: Decoded<HostFrame>;
}

/**
 * Compile schemas (their JSON texts), in order, to standalone validator code of at most
 * `maxCodeBytes` each; start no compile once `budgetMs` have gone by in this job.
 */
export interface CompileJob {
  kind: 'compile';
  id: number;
  texts: string[];
  maxCodeBytes: number;
  budgetMs: number;
}

/** One schema's code, or why it is refused (`ms`: its compile time in the worker), or `skipped` (the budget ran out first). */
export type CompileResult = { skipped?: false; ms: number } & ({ ok: true; source: string } | { ok: false; reason: string });

export interface CompileReply {
  id: number;
  results: (CompileResult | { skipped: true })[];
}
