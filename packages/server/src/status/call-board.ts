/**
 * The calls of one executor as an operator sees them (issue 16, the status page and `toolwire
 * status`): every call in flight (id, tool, host, caller, start, output bytes so far) and the last
 * `recent` finished ones with their exit codes. The executor tells the board when a call starts,
 * when it is routed and when it ends; the board keeps nothing of a settled call but one small
 * {@link FinishedCall} in a ring of `recent`. The output bytes of a call in flight are read from its
 * host session when a snapshot is taken (`Router.outputBytes`), not counted per chunk: nothing
 * here runs per chunk, and per call only one small object and a set entry.
 *
 * A call is stopped from here with the same stop its own signal would give it: the router sends the
 * host `cancel` and the call settles 130 (`Router.stopCall`).
 */
import type { Capture } from '@toolwire/protocol';
import { keepShape } from '../keep-shape.js';
import type { RoutedCall } from '../seam.js';

/** A finished call as the board keeps it. Times in ms since the epoch; `bytes` = stdout + stderr bytes of its capture. */
export interface FinishedCall {
  id: string;
  agent: string;
  tool: string;
  /** The host that answered the tool's name when the call started; absent for a local or unknown tool. */
  host?: string | undefined;
  /** In a cluster: the node of that host (DESIGN §10); absent on a single node. */
  node?: string | undefined;
  startedAt: number;
  endedAt: number;
  exitCode: number;
  /** The failure kind when toolwire ended the call (`FailureKind`). */
  failure?: string | undefined;
  bytes: number;
}

/** A copy of `done` without the keys whose value is `undefined`. */
function copy(done: FinishedCall): FinishedCall {
  const out: FinishedCall = {
    id: done.id,
    agent: done.agent,
    tool: done.tool,
    startedAt: done.startedAt,
    endedAt: done.endedAt,
    exitCode: done.exitCode,
    bytes: done.bytes,
  };
  if (done.host !== undefined) out.host = done.host;
  if (done.node !== undefined) out.node = done.node;
  if (done.failure !== undefined) out.failure = done.failure;
  return out;
}

/** One call in flight. Set only by the board and the executor (`routed`). */
export class LiveCall {
  readonly id: string;
  readonly agent: string;
  readonly tool: string;
  readonly host: string | undefined;
  /** In a cluster: the node of `host` when the call started; `undefined` on a single node. */
  readonly node: string | undefined;
  /** ms since the epoch. */
  readonly startedAt: number;
  /** The call as handed to the router, once routed: what a stop and the output count need. */
  routed: RoutedCall | undefined;
  /** The board's list of calls in flight (set by the board only): older, newer, and whether on it. */
  older: LiveCall | undefined = undefined;
  newer: LiveCall | undefined = undefined;
  onBoard = false;
  /** The first instance is kept (`keepShape`): one per call, none alive between calls. */
  static #shapeKept = false;

  constructor(id: string, agent: string, tool: string, host: string | undefined, node?: string, startedAt = Date.now()) {
    this.id = id;
    this.agent = agent;
    this.tool = tool;
    this.host = host;
    this.node = node;
    this.startedAt = startedAt;
    this.routed = undefined;
    if (!LiveCall.#shapeKept) {
      LiveCall.#shapeKept = true;
      keepShape(this);
    }
  }
}

/** Where a board finds the host of a tool name and stops a routed call (the router). */
export interface BoardRouter {
  hostOf(name: string): string | undefined;
  stopCall(call: RoutedCall): boolean;
  /** In a cluster: the link of a host, whose `node` is set for a host on another node. */
  linkOf?(host: string): { readonly node?: string | undefined } | undefined;
}

/** The outcome of {@link CallBoard.stop}. */
export type StopOutcome = 'stopped' | 'not-found' | 'not-routed';

/** Calls in flight and recently finished. */
export class CallBoard {
  readonly #router: BoardRouter;
  readonly #recentMax: number;
  readonly #node: string | undefined;
  /**
   * Calls in flight, oldest first: a list linked through the calls themselves (adding and removing a
   * call hashes nothing and allocates nothing, unlike a `Set` of fresh objects per call).
   */
  #oldest: LiveCall | undefined;
  #newest: LiveCall | undefined;
  #size = 0;
  /** Ring of finished calls, oldest first once full (`#next` is the oldest slot). */
  readonly #recent: FinishedCall[] = [];
  #next = 0;
  /** Told after each start and end (the status feed); one listener. */
  #changed: (() => void) | undefined;

  /**
   * @param router the router (host lookup, stop)
   * @param recent finished calls kept (`statusRecentCalls`, default 50); a positive integer
   * @param node this server's cluster node id (calls then carry the node of their host); absent on a single node
   */
  constructor(router: BoardRouter, recent: number, node?: string) {
    if (!Number.isInteger(recent) || recent <= 0) throw new RangeError(`CallBoard: recent must be a positive integer, got ${recent}`);
    this.#router = router;
    this.#recentMax = recent;
    this.#node = node;
  }

  /** Calls in flight. */
  get size(): number {
    return this.#size;
  }

  /** Call `listener` after every change (replaces the previous one; `undefined` removes it). A throw is not caught. */
  onChange(listener: (() => void) | undefined): void {
    this.#changed = listener;
  }

  /**
   * A call of `agent` to tool `tool` starts (past the gates). Pair with {@link end}.
   * @param startedAt when it started, ms since the epoch (default now: the caller's clock reading saves one)
   */
  begin(id: string, agent: string, tool: string, startedAt = Date.now()): LiveCall {
    const host = this.#router.hostOf(tool);
    const node = this.#node === undefined || host === undefined ? undefined : (this.#router.linkOf?.(host)?.node ?? this.#node);
    const call = new LiveCall(id, agent, tool, host, node, startedAt);
    call.onBoard = true;
    call.older = this.#newest;
    if (this.#newest === undefined) this.#oldest = call;
    else this.#newest.newer = call;
    this.#newest = call;
    this.#size++;
    this.#changed?.();
    return call;
  }

  /**
   * `call` settled with `capture` (kept among the recent calls), or without one (dropped).
   * @param endedAt when it ended, ms since the epoch (default now)
   */
  end(call: LiveCall, capture: Capture | undefined, endedAt = Date.now()): void {
    if (!call.onBoard) return;
    this.#unlink(call);
    const node = call.routed?.node ?? call.node;
    call.routed = undefined;
    if (capture !== undefined) {
      // The ring's slots are reused once it is full: no object per finished call.
      const full = this.#recent.length === this.#recentMax;
      const done: FinishedCall = full ? this.#recent[this.#next]! : ({} as FinishedCall);
      done.id = call.id;
      done.agent = call.agent;
      done.tool = call.tool;
      done.host = call.host;
      done.node = node;
      done.startedAt = call.startedAt;
      done.endedAt = endedAt;
      done.exitCode = capture.exitCode;
      done.failure = capture.failure;
      done.bytes = capture.stdout.length + capture.stderr.length;
      if (!full) this.#recent.push(done);
      else this.#next = (this.#next + 1) % this.#recentMax;
    }
    this.#changed?.();
  }

  /** Take `call` off the list of calls in flight. */
  #unlink(call: LiveCall): void {
    const { older, newer } = call;
    if (older === undefined) this.#oldest = newer;
    else older.newer = newer;
    if (newer === undefined) this.#newest = older;
    else newer.older = older;
    call.older = undefined;
    call.newer = undefined;
    call.onBoard = false;
    this.#size--;
  }

  /** Calls in flight, oldest first, at most `limit` of them. */
  live(limit = Infinity): LiveCall[] {
    const out: LiveCall[] = [];
    for (let call = this.#oldest; call !== undefined && out.length < limit; call = call.newer) out.push(call);
    return out;
  }

  /** Finished calls, newest first (at most `recent`), as copies (a `host` or `failure` left out when absent). */
  recent(): FinishedCall[] {
    const ring = this.#recent;
    const ordered = ring.length < this.#recentMax ? ring.slice() : [...ring.slice(this.#next), ...ring.slice(0, this.#next)];
    return ordered.reverse().map(copy);
  }

  /** The call in flight with id `id` (of `agent` when given: ids are unique per agent). */
  find(id: string, agent?: string): LiveCall | undefined {
    for (let call = this.#oldest; call !== undefined; call = call.newer) if (call.id === id && (agent === undefined || call.agent === agent)) return call;
    return undefined;
  }

  /**
   * Stop `call` as its own signal would (the host is sent `cancel`, the call settles 130).
   * `not-routed`: it has not reached a host yet (input check, disk record) or its tool is local.
   */
  stop(call: LiveCall): StopOutcome {
    if (!call.onBoard) return 'not-found';
    if (call.routed === undefined) return 'not-routed';
    return this.#router.stopCall(call.routed) ? 'stopped' : 'not-routed';
  }
}
