/**
 * Unauthenticated connections grouped by address, with the groups indexed by size so that the
 * largest group is found without a scan: when the total cap is reached, the connection closed is
 * the oldest of the address holding the most, so a peer holding many slots pays before a peer
 * holding one (a legitimate caller's single connection is the last to go).
 *
 * The size index is a linked list of groups per size, in an array indexed by size: a group moving
 * from one size to the next is unlinked and linked again, with nothing allocated. (Every accepted
 * and every closed connection moves its group, so a flood would otherwise create and drop a
 * container per connection.) The groups' Map and each group's Set are renewed every
 * {@link RENEW_AFTER_ADDS} additions (`churn.ts`).
 */
import { RENEW_AFTER_ADDS } from '../churn.js';

/** What a group holds: anything naming its address group (members are told apart by identity). */
export interface Grouped {
  group: string;
}

/** One address group: its members, and its place in the list of the groups of its size. */
interface Group<T> {
  /** Members, oldest first (Set order = insertion order). */
  members: Set<T>;
  /** Additions since `members` was last renewed. */
  adds: number;
  prev: Group<T> | undefined;
  next: Group<T> | undefined;
}

export class AddressGroups<T extends Grouped> {
  #groups = new Map<string, Group<T>>();
  /** Groups made since `#groups` was last renewed. */
  #made = 0;
  /** The first and last group of each size (index = size); within a size, in the order they reached it. */
  readonly #first: (Group<T> | undefined)[] = [];
  readonly #last: (Group<T> | undefined)[] = [];
  /** No group is larger than this (kept tight lazily in {@link largestOldest}). */
  #maxSize = 0;

  /** Members of `group` now. */
  sizeOf(group: string): number {
    return this.#groups.get(group)?.members.size ?? 0;
  }

  /** The oldest member of `group`. */
  oldestOf(group: string): T | undefined {
    return this.#groups.get(group)?.members.values().next().value;
  }

  /** The oldest member of the largest group (of those equally large, the one that grew to that size first). */
  largestOldest(): T | undefined {
    while (this.#maxSize > 0) {
      const first = this.#first[this.#maxSize];
      if (first !== undefined) return first.members.values().next().value;
      this.#maxSize--;
    }
    return undefined;
  }

  add(member: T): void {
    let group = this.#groups.get(member.group);
    if (group === undefined) {
      if (++this.#made === RENEW_AFTER_ADDS) {
        this.#made = 0;
        this.#groups = new Map(this.#groups);
      }
      this.#groups.set(member.group, (group = { members: new Set<T>(), adds: 0, prev: undefined, next: undefined }));
    } else if (++group.adds === RENEW_AFTER_ADDS) {
      group.adds = 0;
      group.members = new Set(group.members);
    }
    const before = group.members.size;
    group.members.add(member);
    this.#move(group, before);
  }

  remove(member: T): void {
    const group = this.#groups.get(member.group);
    if (group?.members.has(member) !== true) return;
    const before = group.members.size;
    group.members.delete(member);
    if (group.members.size === 0) this.#groups.delete(member.group);
    this.#move(group, before);
  }

  /** Move `group` from the list of size `from` to the list of its size now (none for 0). */
  #move(group: Group<T>, from: number): void {
    const to = group.members.size;
    if (from === to) return;
    if (from > 0) {
      if (group.prev === undefined) this.#first[from] = group.next;
      else group.prev.next = group.next;
      if (group.next === undefined) this.#last[from] = group.prev;
      else group.next.prev = group.prev;
      group.prev = group.next = undefined;
    }
    if (to === 0) return;
    const last = this.#last[to];
    group.prev = last;
    if (last === undefined) this.#first[to] = group;
    else last.next = group;
    this.#last[to] = group;
    if (to > this.#maxSize) this.#maxSize = to;
  }
}
