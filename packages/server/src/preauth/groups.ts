/**
 * Unauthenticated connections grouped by address, with the groups indexed by size so that the
 * largest group is found without a scan: when the total cap is reached, the connection closed is
 * the oldest of the address holding the most, so a peer holding many slots pays before a peer
 * holding one (a legitimate caller's single connection is the last to go).
 */

/** What a group holds: anything with a `tuple` key. */
export interface Grouped {
  tuple: string;
  group: string;
}

export class AddressGroups<T extends Grouped> {
  /** Members by group, oldest first (Map order = insertion order). */
  readonly #groups = new Map<string, Map<string, T>>();
  /** Groups by their size; within a size, in the order they reached it. */
  readonly #bySize = new Map<number, Set<string>>();
  /** No group is larger than this (kept tight lazily in {@link largestOldest}). */
  #maxSize = 0;

  /** Members of `group` now. */
  sizeOf(group: string): number {
    return this.#groups.get(group)?.size ?? 0;
  }

  /** The oldest member of `group`. */
  oldestOf(group: string): T | undefined {
    return this.#groups.get(group)?.values().next().value;
  }

  /** The oldest member of the largest group (of those equally large, the one that grew to that size first). */
  largestOldest(): T | undefined {
    while (this.#maxSize > 0) {
      const groups = this.#bySize.get(this.#maxSize);
      const first = groups?.values().next().value;
      if (first !== undefined) return this.oldestOf(first);
      this.#maxSize--;
    }
    return undefined;
  }

  add(member: T): void {
    let members = this.#groups.get(member.group);
    if (members === undefined) this.#groups.set(member.group, (members = new Map<string, T>()));
    const before = members.size;
    members.set(member.tuple, member);
    this.#resize(member.group, before, members.size);
  }

  remove(member: T): void {
    const members = this.#groups.get(member.group);
    if (members?.get(member.tuple) !== member) return;
    const before = members.size;
    members.delete(member.tuple);
    if (members.size === 0) this.#groups.delete(member.group);
    this.#resize(member.group, before, members.size);
  }

  #resize(group: string, from: number, to: number): void {
    if (from === to) return;
    const old = this.#bySize.get(from);
    old?.delete(group);
    if (old?.size === 0) this.#bySize.delete(from);
    if (to === 0) return;
    let set = this.#bySize.get(to);
    if (set === undefined) this.#bySize.set(to, (set = new Set<string>()));
    set.add(group);
    if (to > this.#maxSize) this.#maxSize = to;
  }
}
