/**
 * Hidden classes that must outlive a full GC taken while no call is in flight. V8 holds the hidden
 * classes (maps) that optimized code relies on weakly: a full GC that finds no live object of a
 * per-call class (a server between bursts, or any idle moment) drops them and deoptimizes every
 * function that made or read such an object — the whole call path, inlined — which then runs
 * unoptimized until V8 optimizes it again. One object of each such class kept alive prevents it.
 */
const kept: object[] = [];

/** Keep `value` referenced for the life of the process (once per class: the first instance will do). */
export function keepShape(value: object): void {
  kept.push(value);
}

// Node's `Immediate`: the call path makes one per turn (the record writer's batch, the executor's
// and the sessions' stop-signal releases) and none is left between bursts, so a full GC then
// deoptimized every function that inlines `setImmediate` (the record writer's `write`, `#schedule`,
// `#done`). One, cleared at once (no callback, in no queue), is kept.
const immediate = setImmediate(() => undefined);
clearImmediate(immediate);
keepShape(immediate);
