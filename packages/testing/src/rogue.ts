/**
 * `startRogueHost`: a misbehaving tool host. It authenticates, says hello and advertises like a
 * real one, then answers calls with the frames a script chooses — garbage, wrong shapes, results
 * for unknown ids, duplicate results, late results after a cancel, oversize or binary frames — so a
 * rig can check how its agent handles each (DESIGN §6 lists what the server makes of them).
 */
import { once } from 'node:events';
import { WebSocket } from 'ws';
import { track, untrack } from './cleanup.js';
import type { TestServer } from './server.js';

/** A `call` frame the rogue received. */
export interface RogueCall {
  id: string;
  tool: string;
  input: unknown;
  deadlineMs?: number;
}

/** Ready-made behaviours, each the whole answer to every call; what the caller then sees is in the README. */
export type RogueBehaviour =
  | 'garbage' // unparsable text → close 1002, calls 76
  | 'invalid-utf8' // a text frame that is not UTF-8 → close 1007, calls 76
  | 'binary' // a binary frame → close 1003, calls 76
  | 'oversize' // a frame over the server's maxPayload → close 1009, calls 76
  | 'wrong-shape' // a result of the wrong shape → that call 76, session kept
  | 'unknown-id' // a result for an id never sent (dropped), then the real answer → 0
  | 'duplicate' // the answer twice → the first wins (0), the second dropped
  | 'late-after-cancel' // answers only after the server's cancel → the call's 124/130 stands, the late result dropped
  | 'silent' // never answers → 124 at the deadline
  | 'echo'; // answers the input JSON → 0

/** A scripted rogue: what it advertises and what it does on each call and cancel. */
export interface RogueScript {
  /** Host identity; default `rogue`. */
  name?: string;
  /** Advertised tools (sent as they are, valid or not); default one tool `rogue` with schema `{type: "object"}`. */
  tools?: unknown[];
  onCall?(call: RogueCall, rogue: RogueHost): void | Promise<void>;
  onCancel?(cancel: { id: string; reason: string }, rogue: RogueHost): void | Promise<void>;
}

/** A connected rogue host. */
export interface RogueHost extends AsyncDisposable {
  readonly name: string;
  readonly ws: WebSocket;
  /** The server's `welcome` (limits: `maxPayload`…). */
  readonly welcome: Record<string, unknown>;
  /** The server's answer to the advertise. */
  readonly advertised: Record<string, unknown>;
  /** Calls and cancels received, in order. */
  readonly calls: RogueCall[];
  readonly cancels: { id: string; reason: string }[];
  /** Resolves with the close code and reason the server sent (1006 when the connection ended without one). */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Send `frame` as one JSON text frame. */
  send(frame: unknown): void;
  /** Send a `result` for `id` (stdout/stderr as text). */
  result(id: string, answer?: { stdout?: string; stderr?: string; exitCode?: number }): void;
  /** Send text that is not JSON. */
  garbage(): void;
  /** Send a text frame of bytes that are not UTF-8. */
  invalidUtf8(): void;
  /** Send a binary frame. */
  binary(): void;
  /** Send a `result` for `id` larger than the server's `maxPayload`. */
  oversize(id: string): void;
  /** Send a `result` for `id` whose `stdout` is a number. */
  wrongShape(id: string): void;
  /** Send an `advertise` of `tools` (as they are); resolves with the server's `advertised` answer. */
  advertise(tools: unknown[], timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the next JSON frame of `type` the server sends from now on; rejects after `timeoutMs` (default 10000). */
  next(type: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the next call (or the first not yet taken); rejects after `timeoutMs` (default 10000). */
  nextCall(timeoutMs?: number): Promise<RogueCall>;
  /** Resolves with the cancel of call `id`; rejects after `timeoutMs` (default 10000). */
  cancelOf(id: string, timeoutMs?: number): Promise<{ id: string; reason: string }>;
  /** Close the connection (1000). Idempotent. */
  close(): Promise<void>;
}

const behaviours: Record<RogueBehaviour, RogueScript['onCall']> = {
  garbage: (_c, r) => r.garbage(),
  'invalid-utf8': (_c, r) => r.invalidUtf8(),
  binary: (_c, r) => r.binary(),
  oversize: (c, r) => r.oversize(c.id),
  'wrong-shape': (c, r) => r.wrongShape(c.id),
  'unknown-id': (c, r) => {
    r.result(`${c.id}-unknown`, { stdout: 'not yours' });
    r.result(c.id, { stdout: 'answered' });
  },
  duplicate: (c, r) => {
    r.result(c.id, { stdout: 'first' });
    r.result(c.id, { stdout: 'second' });
  },
  'late-after-cancel': async (c, r) => {
    await r.cancelOf(c.id, 600_000);
    r.result(c.id, { stdout: 'late' });
  },
  silent: () => {},
  echo: (c, r) => r.result(c.id, { stdout: JSON.stringify(c.input) }),
};

/**
 * The first item of `list` that matches, as items arrive (`subscribe`); rejected after `timeoutMs`, or
 * at once when the connection is closed (`gone()` says with which code), so no wait outlives it.
 */
function waitIn<T>(
  list: T[],
  match: (item: T) => boolean,
  subscribe: (fn: () => void) => () => void,
  timeoutMs: number,
  what: string,
  gone: () => number | undefined,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const i = list.findIndex(match);
      const code = i < 0 ? gone() : undefined;
      if (i < 0 && code === undefined) return false;
      clearTimeout(timer);
      unsubscribe();
      if (i >= 0) resolve(list[i]!);
      else reject(new Error(`rogue host: connection closed (${code}) while waiting for ${what}`));
      return true;
    };
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`rogue host: no ${what} within ${timeoutMs} ms`));
    }, timeoutMs);
    const unsubscribe = subscribe(() => void check());
    check();
  });
}

/** A server the kit did not start: its host URL and a host token it accepts (the script's `name` is then unused). */
export interface RogueTarget {
  url: string;
  token: string;
}

/** `script` as a script: a behaviour's, or the script itself once its shape is checked. @throws TypeError otherwise */
function rogueScript(script: RogueBehaviour | RogueScript): RogueScript {
  if (typeof script === 'string') {
    if (!Object.hasOwn(behaviours, script)) throw new TypeError(`startRogueHost: unknown behaviour ${script}`);
    return { onCall: behaviours[script] };
  }
  if (typeof script !== 'object' || script === null)
    throw new TypeError('startRogueHost: give a behaviour name or a script {name?, tools?, onCall?(call, rogue), …}');
  // No onCall: the test answers each call by hand (`nextCall()`, then `result(id, …)`).
  if (script.onCall !== undefined && typeof script.onCall !== 'function') throw new TypeError("startRogueHost: a script's onCall must be a function");
  if (script.onCancel !== undefined && typeof script.onCancel !== 'function') throw new TypeError("startRogueHost: a script's onCancel must be a function");
  if (script.name !== undefined && typeof script.name !== 'string') throw new TypeError("startRogueHost: a script's name must be a string");
  if (script.tools !== undefined && !Array.isArray(script.tools)) throw new TypeError("startRogueHost: a script's tools must be an array");
  return script;
}

/**
 * Connect a rogue host to `server` — a {@link TestServer}, or any server as `{url, token}` — (or
 * through `options.via`, a fault proxy's URL), hello,
 * advertise, then run `script` (a {@link RogueBehaviour} or a {@link RogueScript}) on every call.
 * @throws TypeError at once for an unknown behaviour or a script with an `onCall`, `onCancel`,
 *   `name` or `tools` of the wrong type; Error when the upgrade or hello fails
 */
export async function startRogueHost(server: TestServer | RogueTarget, script: RogueBehaviour | RogueScript, options: { via?: string } = {}): Promise<RogueHost> {
  const s = rogueScript(script);
  const name = s.name ?? 'rogue';
  const token = 'hostToken' in server ? await server.hostToken(name) : server.token;
  const ws = new WebSocket(options.via ?? server.url, { headers: { authorization: `Bearer ${token}` } });
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
  let closedCode: number | undefined;
  const gone = (): number | undefined => closedCode;
  const calls: RogueCall[] = [];
  const cancels: { id: string; reason: string }[] = [];
  const taken = new Set<RogueCall>();
  const listeners = new Set<() => void>();
  const subscribe = (fn: () => void): (() => void) => {
    listeners.add(fn);
    return () => listeners.delete(fn);
  };
  const frames: Record<string, unknown>[] = [];
  // Every wait ends with the connection (a wait for a cancel may be 600 s long).
  ws.once('close', (code: number) => {
    closedCode = code;
    for (const fn of [...listeners]) fn();
  });
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    } catch {
      return;
    }
    frames.push(frame);
    if (frame.type === 'call') calls.push(frame as unknown as RogueCall);
    if (frame.type === 'cancel') cancels.push(frame as unknown as { id: string; reason: string });
    for (const fn of [...listeners]) fn();
    if (frame.type === 'call') void Promise.resolve(s.onCall?.(frame as unknown as RogueCall, rogue)).catch(() => {});
    if (frame.type === 'cancel') void Promise.resolve(s.onCancel?.(frame as unknown as { id: string; reason: string }, rogue)).catch(() => {});
  });
  const frameOf = (type: string, timeoutMs = 10_000): Promise<Record<string, unknown>> => {
    const from = frames.length;
    return waitIn(frames, (f) => f.type === type && frames.indexOf(f) >= from, subscribe, timeoutMs, `${type} frame`, gone);
  };
  let closing: Promise<void> | undefined;
  const text = (frame: unknown): void => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  const rogue = {
    name,
    ws,
    welcome: {},
    advertised: {},
    calls,
    cancels,
    closed,
    send: text,
    result: (id: string, a: { stdout?: string; stderr?: string; exitCode?: number } = {}) =>
      text({ type: 'result', id, stdout: a.stdout ?? '', stderr: a.stderr ?? '', exitCode: a.exitCode ?? 0 }),
    garbage: () => ws.send('this is not json {'),
    invalidUtf8: () => ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false }),
    binary: () => ws.send(Buffer.from('{"type":"result"}'), { binary: true }),
    oversize: (id: string) => {
      const limits = (rogue.welcome as { limits?: { maxPayload?: number } }).limits;
      text({ type: 'result', id, stdout: 'x'.repeat((limits?.maxPayload ?? 16 * 1024 * 1024) + 1), stderr: '', exitCode: 0 });
    },
    wrongShape: (id: string) => text({ type: 'result', id, stdout: 42 }),
    advertise: (tools: unknown[], timeoutMs?: number) => {
      const answer = frameOf('advertised', timeoutMs);
      text({ type: 'advertise', tools });
      return answer;
    },
    next: frameOf,
    nextCall: (timeoutMs = 10_000) =>
      waitIn(calls, (c) => !taken.has(c), subscribe, timeoutMs, 'call', gone).then((c) => {
        taken.add(c);
        return c;
      }),
    cancelOf: (id: string, timeoutMs = 10_000) => waitIn(cancels, (c) => c.id === id, subscribe, timeoutMs, `cancel of ${id}`, gone),
    close() {
      closing ??= (async () => {
        if (ws.readyState !== WebSocket.CLOSED) {
          ws.close(1000);
          const timer = setTimeout(() => ws.terminate(), 1000);
          await closed;
          clearTimeout(timer);
        }
        untrack(rogue);
      })();
      return closing;
    },
    [Symbol.asyncDispose]: () => rogue.close(),
  } satisfies RogueHost as RogueHost & { welcome: Record<string, unknown>; advertised: Record<string, unknown> };
  track(rogue);
  try {
    await Promise.race([once(ws, 'open'), closed.then(({ code }) => Promise.reject(new Error(`rogue host: connection closed ${code} before it opened`)))]);
    const welcome = frameOf('welcome');
    text({ type: 'hello', protocol: 1, software: 'toolwire-testing rogue' });
    rogue.welcome = await welcome;
    rogue.advertised = await rogue.advertise(s.tools ?? [{ name: 'rogue', inputSchema: { type: 'object' } }]);
  } catch (error) {
    await rogue.close();
    throw error;
  }
  return rogue;
}
