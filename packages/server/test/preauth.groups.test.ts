/**
 * The pre-auth guard's address groups (`preauth/groups.ts`): sizes per address, the oldest member
 * of an address, and the oldest member of the largest address — of equally large ones, the one that
 * reached that size first — checked against a plain model over a long seeded run of adds and removes.
 */
import { describe, expect, it } from 'vitest';
import { AddressGroups } from '../src/preauth/groups.js';

interface Member {
  tuple: string;
  group: string;
}

/** The same answers computed the slow way: members in insertion order, and when each group last changed size. */
class Model {
  readonly members = new Map<string, Member[]>();
  readonly changedAt = new Map<string, number>();
  #clock = 0;

  add(m: Member): void {
    const list = this.members.get(m.group) ?? [];
    list.push(m);
    this.members.set(m.group, list);
    this.changedAt.set(m.group, this.#clock++);
  }

  remove(m: Member): void {
    const list = this.members.get(m.group)!;
    list.splice(list.indexOf(m), 1);
    if (list.length === 0) this.members.delete(m.group);
    this.changedAt.set(m.group, this.#clock++);
  }

  largestOldest(): Member | undefined {
    let best: string | undefined;
    for (const [group, list] of this.members) {
      const top = best === undefined ? undefined : this.members.get(best)!;
      if (top === undefined || list.length > top.length || (list.length === top.length && this.changedAt.get(group)! < this.changedAt.get(best!)!)) best = group;
    }
    return best === undefined ? undefined : this.members.get(best)![0];
  }
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('AddressGroups', () => {
  it('answers size, oldest of an address and oldest of the largest address as a plain model does, over 20,000 random adds and removes', () => {
    const groups = new AddressGroups<Member>();
    const model = new Model();
    const live: Member[] = [];
    const next = random(11);
    for (let i = 0; i < 20_000; i++) {
      if (live.length === 0 || next() < 0.52) {
        const m = { tuple: `t${i}`, group: `g${Math.floor(next() * 6)}` };
        groups.add(m);
        model.add(m);
        live.push(m);
      } else {
        // Mostly the oldest goes first (as connections do), sometimes any.
        const k = next() < 0.7 ? 0 : Math.floor(next() * live.length);
        const [m] = live.splice(k, 1);
        groups.remove(m!);
        model.remove(m!);
      }
      expect(groups.largestOldest()).toBe(model.largestOldest());
      const g = `g${i % 6}`;
      expect(groups.sizeOf(g)).toBe(model.members.get(g)?.length ?? 0);
      expect(groups.oldestOf(g)).toBe(model.members.get(g)?.[0]);
    }
  });

  it('ignores the removal of a member it does not hold', () => {
    const groups = new AddressGroups<Member>();
    const a = { tuple: 'a', group: 'x' };
    groups.add(a);
    groups.remove({ tuple: 'a', group: 'x' }); // same key, another object
    groups.remove({ tuple: 'b', group: 'y' });
    expect(groups.sizeOf('x')).toBe(1);
    expect(groups.largestOldest()).toBe(a);
    groups.remove(a);
    expect(groups.largestOldest()).toBeUndefined();
  });
});
