/**
 * The offload workers of this process, shared by every server in it: one decodes large frames, one
 * compiles schemas. No thread exists until the first job; each ends after its idle time.
 */
import { OffloadWorker } from './offload.js';

/** An offload worker with no job for this long ends (its memory is returned), ms. */
export const WORKER_IDLE_MS = 5_000;

let workers: { decode: OffloadWorker; compile: OffloadWorker } | undefined;

/** The shared workers; `idleMs` (a test seam) changes their idle time. */
export function sharedWorkers(idleMs?: number): { decode: OffloadWorker; compile: OffloadWorker } {
  workers ??= {
    // Both yield the CPU to the event loop first (which serves every host); decoding gets the memory
    // a 16 MiB frame of a million values needs.
    decode: new OffloadWorker({ name: 'decode', idleMs: WORKER_IDLE_MS, resourceLimits: { maxOldGenerationSizeMb: 512, maxYoungGenerationSizeMb: 64 }, nice: 5 }),
    compile: new OffloadWorker({ name: 'compile', idleMs: WORKER_IDLE_MS, resourceLimits: { maxOldGenerationSizeMb: 256 }, nice: 5 }),
  };
  if (idleMs !== undefined) {
    workers.decode.idleMs = idleMs;
    workers.compile.idleMs = idleMs;
  }
  return workers;
}
