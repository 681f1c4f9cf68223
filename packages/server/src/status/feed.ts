/**
 * The status page's live feed: Server-Sent Events at `/status/events`. Each viewer gets
 * `event: snapshot` with the whole {@link StatusSnapshot} as JSON when it changed: at most
 * {@link SOON_MS} after a call starts or ends or the tool set changes, and otherwise checked every
 * {@link TICK_MS} (output bytes, heartbeats); an unchanged picture is sent again only every
 * {@link KEEPALIVE_MS} (it keeps proxies from closing the stream).
 *
 * Bounds: `statusMaxViewers` streams at once (more → HTTP 503); a viewer that does not read is sent
 * nothing more until its socket drains (one snapshot waits in its buffer at most), and is closed once
 * it has not drained for {@link STALLED_MS} (it would hold a viewer slot for its whole session); every
 * stream ends after {@link FEED_MAX_MS} (the page reconnects), which also frees the slot of a client
 * whose kernel buffers still take writes but that never reads; a viewer whose session ended (logout, expiry, token revoked) is closed at the next tick. The timer runs only while
 * someone is watching, and `close()` ends every stream.
 */
import type { ServerResponse } from 'node:http';
import type { StatusSnapshot } from './snapshot.js';

/** Delay from a change to its snapshot, ms (changes within it are sent as one). */
export const SOON_MS = 100;
/** Interval of the change check while someone watches, ms. */
export const TICK_MS = 1_000;
/** An unchanged snapshot is sent again after this long, ms. */
export const KEEPALIVE_MS = 15_000;
/** A viewer whose socket has not drained for this long is closed, ms (four keep-alive periods). */
export const STALLED_MS = 4 * KEEPALIVE_MS;
/**
 * Every stream is ended after this long, ms (10 min); the page's EventSource reconnects (`retry`).
 * A client that never reads is seldom caught by {@link STALLED_MS}: the kernel's socket buffers
 * (tens of MiB with TCP autotuning) take its snapshots for hours before a write is refused.
 */
export const FEED_MAX_MS = 10 * 60_000;

interface Viewer {
  res: ServerResponse;
  /** False while its socket has not drained. */
  ready: boolean;
  /** When its socket last stopped taking writes (`Date.now()`); meaningful while not `ready`. */
  stalledSince: number;
  /** A snapshot was skipped while it was not ready: it gets the current one at its drain. */
  missed: boolean;
  /** Still allowed to watch (its session is current). */
  allowed: () => boolean;
  /** When its stream started (`Date.now()`). */
  since: number;
}

/** The viewers of one server. */
export class StatusFeed {
  readonly #snapshot: () => StatusSnapshot;
  readonly #maxViewers: number;
  readonly #viewers = new Set<Viewer>();
  #timer: NodeJS.Timeout | undefined;
  #soon: NodeJS.Timeout | undefined;
  /** The last snapshot sent, without its `at`. */
  #last = '';
  #lastSentAt = 0;
  #closed = false;

  constructor(snapshot: () => StatusSnapshot, maxViewers: number) {
    this.#snapshot = snapshot;
    this.#maxViewers = maxViewers;
  }

  /** Viewers watching now. */
  get size(): number {
    return this.#viewers.size;
  }

  /**
   * Start streaming to `res` (headers not sent yet); `hello` is sent first as `event: you`.
   * @returns false when `statusMaxViewers` are watching or the feed is closed (nothing was written)
   */
  add(res: ServerResponse, hello: unknown, allowed: () => boolean, headers: Record<string, string>): boolean {
    if (this.#closed || this.#viewers.size >= this.#maxViewers) return false;
    const viewer: Viewer = { res, ready: true, stalledSince: 0, missed: false, allowed, since: Date.now() };
    this.#viewers.add(viewer);
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.on('close', () => this.#drop(viewer));
    res.on('drain', () => {
      viewer.ready = true;
      if (viewer.missed && !this.#closed) this.#send(viewer, this.#json());
    });
    res.write(`retry: 2000\nevent: you\ndata: ${JSON.stringify(hello)}\n\n`);
    const json = this.#json();
    this.#send(viewer, json);
    this.#timer ??= setInterval(() => this.#tick(false), TICK_MS);
    return true;
  }

  /** Something changed: send the snapshot soon (at most {@link SOON_MS} from now). */
  changed(): void {
    if (this.#viewers.size === 0 || this.#soon !== undefined) return;
    this.#soon = setTimeout(() => {
      this.#soon = undefined;
      this.#tick(true);
    }, SOON_MS);
  }

  /** End every stream and clear the timers. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const viewer of [...this.#viewers]) viewer.res.end();
    this.#viewers.clear();
    this.#stop();
  }

  #tick(urgent: boolean): void {
    const now = Date.now();
    for (const viewer of [...this.#viewers]) {
      if (!viewer.allowed()) {
        viewer.res.end();
        this.#drop(viewer);
      } else if (!viewer.ready && now - viewer.stalledSince >= STALLED_MS) {
        viewer.res.destroy(); // not reading: what it has not read is of no use any more
        this.#drop(viewer);
      } else if (now - viewer.since >= FEED_MAX_MS) {
        viewer.res.end(); // a page that reads reconnects at once; one that does not, frees its slot
        this.#drop(viewer);
      }
    }
    if (this.#viewers.size === 0) return;
    const json = this.#json();
    const body = json.slice(json.indexOf(',')); // without `at` (the first key)
    if (!urgent && body === this.#last && Date.now() - this.#lastSentAt < KEEPALIVE_MS) return;
    this.#last = body;
    this.#lastSentAt = Date.now();
    for (const viewer of this.#viewers) this.#send(viewer, json);
  }

  #json(): string {
    return JSON.stringify(this.#snapshot());
  }

  #send(viewer: Viewer, json: string): void {
    viewer.missed = !viewer.ready;
    if (viewer.missed) return;
    viewer.ready = viewer.res.write(`event: snapshot\ndata: ${json}\n\n`);
    if (!viewer.ready) viewer.stalledSince = Date.now();
  }

  #drop(viewer: Viewer): void {
    this.#viewers.delete(viewer);
    if (this.#viewers.size === 0) this.#stop();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#soon);
    this.#soon = undefined;
  }
}
