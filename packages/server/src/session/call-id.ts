/** Wire ids of calls sent to hosts (DESIGN §6): fresh per call, never the caller's id. */
import { nanoid } from 'nanoid';

/** Random part of every wire id minted by {@link sequentialCallId} in this process (12 nanoid characters, 72 bits). */
const ID_PREFIX = nanoid(12);
let idCount = 0;

/**
 * The default wire id: a random per-process prefix and a counter (base 36), e.g. `V1StGXR8_Z5j2bx`.
 * Unique among the process's calls (so among a session's pending calls) and, through the prefix,
 * across processes; `[A-Za-z0-9_-]`, at most 23 characters. Cheaper than a `nanoid()` per call.
 */
export function sequentialCallId(): string {
  return ID_PREFIX + (idCount++).toString(36);
}

/** Draws of a fresh wire id before a call is refused (the default generator never collides in practice). */
export const MAX_ID_DRAWS = 8;
