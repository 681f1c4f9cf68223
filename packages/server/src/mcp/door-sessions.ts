/**
 * The 2025-era sessions of the MCP door (`door.ts`): their table, the session limits (room taken
 * at admission, eviction of the least recently active idle session), idle expiry, and the count of
 * each session's open requests. The door opens a session and hands it here; everything else about
 * a session's life is in this file.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { Server } from '@modelcontextprotocol/server';
import pTimeout from 'p-timeout';
import type { Logger } from '../options.js';
import type { CallerPrincipal } from './caller.js';
import { DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_MS, type McpDoorOptions } from './door-options.js';
import { HOLD_ANSWER_MS, type PlainCalls } from './plain-call.js';

/** One open MCP session (2025 era). */
export interface DoorSession {
  caller: string;
  /** The principal that opened the session (revoked when its token is removed or rotated). */
  principal: CallerPrincipal;
  server: Server;
  transport: NodeStreamableHTTPServerTransport;
  /** HTTP requests of this session still open (a GET notification stream stays open). */
  open: number;
  /** POST and DELETE requests of this session still open (what keeps it from expiring). */
  busy: number;
  /** When a POST or DELETE of this session last started or ended, ms since the epoch. */
  lastActive: number;
  /** Its plain `tools/call`s, which the door answers itself (`plain-call.ts`). */
  plain: PlainCalls;
  /**
   * Stops the session's other calls (those its SDK `Server` answers) with their answers still written:
   * aborted when its caller token is revoked ({@link DoorSessions.revoke}).
   */
  stop: AbortController;
  /** Told when {@link busy} falls to 0 (set while a revoke waits for the session's answers). */
  onIdle: (() => void) | undefined;
}

/** Room for one session being opened: `evicted` settles once the evicted session (if any) closed; `release` (idempotent) gives it back. */
export interface SessionRoom {
  evicted: Promise<unknown>;
  release: () => void;
}

/** Idle sessions are looked for at least this often, ms (more often when `sessionIdleMs` is shorter). */
const SWEEP_MS = 30_000;

/*
 * A session POST that asks for no live output has its answer's socket writes held (corked) for at
 * most HOLD_ANSWER_MS: the SDK answers on an SSE stream whose headers it flushes at once, and the
 * event and the stream's end follow when the call completes; held, headers, event and end leave in
 * one write. Past this, what is held goes out and the rest is written as it comes.
 */

/** The door's open sessions by id, within `maxSessions` and `maxSessionsPerCaller`, expired after `sessionIdleMs` idle. */
export class DoorSessions {
  readonly #sessions = new Map<string, DoorSession>();
  readonly #maxSessions: number;
  readonly #perCaller: number;
  readonly #idleMs: number;
  readonly #logger: Logger;
  /** Sessions being opened (admitted, not yet open), per caller and in total ({@link reserve}). */
  readonly #opening = new Map<string, number>();
  #openingTotal = 0;
  readonly #sweep: NodeJS.Timeout;

  /** @throws RangeError for a `maxSessionsPerCaller` or `sessionIdleMs` that is not a positive integer */
  constructor(options: Pick<McpDoorOptions, 'maxSessions' | 'maxSessionsPerCaller' | 'sessionIdleMs' | 'logger'>) {
    this.#maxSessions = options.maxSessions;
    this.#perCaller = options.maxSessionsPerCaller ?? DEFAULT_MAX_SESSIONS_PER_CALLER;
    this.#idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
    this.#logger = options.logger;
    if (!Number.isInteger(this.#perCaller) || this.#perCaller < 1) throw new RangeError(`maxSessionsPerCaller must be a positive integer, got ${this.#perCaller}`);
    if (!Number.isInteger(this.#idleMs) || this.#idleMs < 1) throw new RangeError(`sessionIdleMs must be a positive integer (ms), got ${this.#idleMs}`);
    this.#sweep = setInterval(() => void this.#expireIdle(), Math.max(1, Math.min(SWEEP_MS, Math.ceil(this.#idleMs / 4))));
    this.#sweep.unref();
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The open session `id`, if any. */
  get(id: string): DoorSession | undefined {
    return this.#sessions.get(id);
  }

  /** Count `session` as open under `id` (its room, from {@link reserve}, is released by the caller). */
  add(id: string, session: DoorSession): void {
    this.#sessions.set(id, session);
  }

  /** Forget session `id` if it is still the one of `server` (its transport or server closed). */
  forget(id: string, server: Server): void {
    if (this.#sessions.get(id)?.server !== server) return;
    this.#sessions.delete(id);
    this.#logger.info({ session: id }, 'MCP session closed');
  }

  /** Stop looking for idle sessions (the door is closing). */
  stopSweep(): void {
    clearInterval(this.#sweep);
  }

  /** Forget every session and close each (their calls in flight settle 130). */
  closeAll(): Promise<unknown> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    return Promise.allSettled(sessions.map((s) => s.server.close()));
  }

  /**
   * Close every session opened with a principal for which `isCurrent` is now false; returns how many.
   * Their calls in flight are stopped first (130) and their answers written, waiting at most
   * `answerWaitMs` (ms, default 0) for the sessions' requests to end, so each caller reads its
   * call's 130 rather than a stream cut off without an answer; then the sessions close.
   */
  async revoke(isCurrent: (principal: CallerPrincipal) => boolean, answerWaitMs = 0): Promise<number> {
    const stale = [...this.#sessions].filter(([, s]) => !isCurrent(s.principal));
    const reason = new Error('the caller token was revoked');
    for (const [id, s] of stale) {
      this.#sessions.delete(id);
      this.#logger.warn({ session: id, caller: s.caller }, 'caller token revoked: closing its MCP session');
      s.stop.abort(reason);
      s.plain.stopAll(reason);
    }
    if (answerWaitMs > 0) await Promise.allSettled(stale.map(([, s]) => pTimeout(whenIdle(s), { milliseconds: answerWaitMs, message: false })));
    await Promise.allSettled(stale.map(([, s]) => s.server.close()));
    return stale.length;
  }

  /** Tell every session's client that the tool list changed (`notifications/tools/list_changed`); a failure is logged at debug. */
  sendToolListChanged(): void {
    for (const [id, session] of this.#sessions) {
      session.server.sendToolListChanged().catch((error: unknown) => {
        this.#logger.debug({ err: error, session: id }, 'tools/list_changed not delivered');
      });
    }
  }

  /**
   * Count `res` as an open request of `session` until it closes; a POST or DELETE is also activity (a
   * GET stream is not). With `hold` (a POST to the SDK transport that asks for no live output) its
   * answer is held ({@link HOLD_ANSWER_MS}).
   */
  track(session: DoorSession, req: IncomingMessage, res: ServerResponse, hold: boolean): void {
    const activity = req.method !== 'GET';
    session.open++;
    if (activity) {
      session.busy++;
      session.lastActive = Date.now();
    }
    let held: NodeJS.Timeout | undefined;
    if (hold) {
      res.cork(); // `res.end()` uncorks fully
      held = setTimeout(() => {
        if (!res.writableEnded) res.uncork();
      }, HOLD_ANSWER_MS);
    }
    res.once('close', () => {
      if (held !== undefined) clearTimeout(held);
      session.open--;
      if (!activity) return;
      session.lastActive = Date.now();
      if (--session.busy === 0) session.onIdle?.();
    });
  }

  /**
   * Room for one more session of `caller`, taken at once: the sessions being opened count against
   * both limits from here until they are open (or failed to open), so initialize requests that are
   * admitted together (e.g. all waiting on the SDK's first load) cannot pass a limit together. At a
   * limit the least recently active idle session is evicted (its closing is `evicted`). Returns why
   * there is no room, or the room.
   */
  reserve(caller: string): SessionRoom | string {
    const evicted: Promise<void>[] = [];
    let own = this.#opening.get(caller) ?? 0;
    for (const s of this.#sessions.values()) if (s.caller === caller) own++;
    if (own >= this.#perCaller) {
      const closing = this.#evictIdle(caller);
      if (closing === undefined)
        return `Too many open sessions for caller ${JSON.stringify(caller)} (mcpMaxSessionsPerCaller ${this.#perCaller}); end one with DELETE`;
      evicted.push(closing);
    }
    if (this.#sessions.size + this.#openingTotal >= this.#maxSessions) {
      const closing = this.#evictIdle();
      if (closing === undefined) return `Too many open sessions (mcpMaxSessions ${this.#maxSessions})`;
      evicted.push(closing);
    }
    this.#opening.set(caller, (this.#opening.get(caller) ?? 0) + 1);
    this.#openingTotal++;
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.#openingTotal--;
      const left = (this.#opening.get(caller) ?? 1) - 1;
      if (left > 0) this.#opening.set(caller, left);
      else this.#opening.delete(caller);
    };
    return { evicted: Promise.allSettled(evicted), release };
  }

  /**
   * Forget the least recently active session (of `caller`, when given) with no open request, at once,
   * and close it: the closing, or `undefined` when every one is busy.
   */
  #evictIdle(caller?: string): Promise<void> | undefined {
    let victim: [string, DoorSession] | undefined;
    for (const entry of this.#sessions) {
      if (caller !== undefined && entry[1].caller !== caller) continue;
      if (entry[1].open === 0 && (victim === undefined || entry[1].lastActive < victim[1].lastActive)) victim = entry;
    }
    if (victim === undefined) return undefined;
    this.#sessions.delete(victim[0]);
    this.#logger.info({ session: victim[0], caller: victim[1].caller }, 'MCP session evicted (idle, session limit reached)');
    return victim[1].server.close();
  }

  /** End every session idle for `sessionIdleMs` or longer (their calls, if any, stop → 130). */
  async #expireIdle(): Promise<void> {
    const now = Date.now();
    const expired = [...this.#sessions].filter(([, s]) => s.busy === 0 && now - s.lastActive >= this.#idleMs);
    for (const [id, s] of expired) {
      this.#sessions.delete(id);
      this.#logger.info({ session: id, caller: s.caller, idleMs: now - s.lastActive }, 'MCP session expired (idle)');
    }
    await Promise.allSettled(expired.map(([, s]) => s.server.close()));
  }
}

/** Resolves once `session` has no POST or DELETE open (at once when it has none). */
function whenIdle(session: DoorSession): Promise<void> {
  if (session.busy === 0) return Promise.resolve();
  return new Promise((resolve) => {
    session.onIdle = () => {
      session.onIdle = undefined;
      resolve();
    };
  });
}
