/**
 * Maps and Sets that gain and lose an entry per call (pending calls, deadlines, stop watches) are
 * replaced by a copy of themselves every {@link RENEW_AFTER_ADDS} additions. V8 links each hash
 * table a collection outgrows to the table that replaces it (for iterators still walking it) and
 * does not clear it. Once a collection's table is in old space (it outlived two scavenges, or a
 * full GC ran), every table the collection goes through after that stays reachable from it, with
 * every entry each one held, until the next full GC: the settled calls' objects survive scavenges,
 * are promoted and die in old space (long scavenges, frequent full GCs). A copy ends the chain: the
 * table in old space then leads only to the few tables before the copy. `clear()` links the cleared
 * table to its new one too: a collection emptied once per turn is replaced by a new one instead.
 */

/** Additions to a churning Map or Set between two copies of it. */
export const RENEW_AFTER_ADDS = 64;
