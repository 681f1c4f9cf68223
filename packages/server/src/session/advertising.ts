/**
 * A host's advertises (DESIGN §6): one is checked at a time (`Router.advertise`: compiling its
 * schemas takes a while, off the event loop); one more may wait, and reading from the socket pauses
 * meanwhile. A newer one replaces the waiting one, which is answered at once as superseded. Each
 * advertise gets exactly one `advertised` reply, bounded (`ToolRegistry.apply`).
 */
import type { AdvertisedMessage } from '@toolwire/protocol';
import type { PreparedAdvertise } from '../registry/prepare.js';
import { rejectAllReply } from '../registry/registry.js';
import type { Flow } from './inbox.js';

/** Reasons listed in the warning about refused tools at most (the reply itself may list hundreds). */
const LOGGED_REASONS = 5;

/** What advertising needs from its session. None of these may throw, except `advertise` (a bug: `failed`). */
export interface AdvertisingDeps {
  /** Check and apply one advertise: `Router.advertise` for this session. */
  advertise: (prepared: PreparedAdvertise) => Promise<AdvertisedMessage>;
  /** Send a reply (dropped when the session has ended). */
  reply: (advertised: AdvertisedMessage) => void;
  /** Log a warning about this host (rate-limited). */
  warn: (fields: Record<string, unknown>, msg: string) => void;
  /** A bug of ours while checking: end the session 1011. */
  failed: (error: unknown) => void;
  maxToolsPerHost: number;
  flow: Flow;
}

export class Advertising {
  readonly #deps: AdvertisingDeps;
  #running = false;
  #next: PreparedAdvertise | undefined;

  constructor(deps: AdvertisingDeps) {
    this.#deps = deps;
  }

  push(prepared: PreparedAdvertise): void {
    if (!this.#running) {
      void this.#loop(prepared);
      return;
    }
    if (this.#next !== undefined) this.#deps.reply(rejectAllReply(this.#next, 'superseded by a newer advertise', this.#deps.maxToolsPerHost));
    this.#next = prepared;
    this.#deps.flow.hold('advertise');
  }

  async #loop(first: PreparedAdvertise): Promise<void> {
    this.#running = true;
    let prepared: PreparedAdvertise | undefined = first;
    while (prepared !== undefined) {
      let advertised: AdvertisedMessage;
      try {
        advertised = await this.#deps.advertise(prepared);
      } catch (error) {
        this.#deps.failed(error);
        return; // the session has ended: nothing more is checked
      }
      const refused = advertised.rejected.length + (advertised.moreRejected ?? 0);
      if (refused > 0) {
        const first = advertised.rejected.slice(0, LOGGED_REASONS);
        this.#deps.warn({ refused, accepted: advertised.accepted.length, first }, 'host advertised invalid tools');
      }
      this.#deps.reply(advertised);
      prepared = this.#next;
      this.#next = undefined;
      if (prepared !== undefined) this.#deps.flow.release('advertise');
    }
    this.#running = false;
  }
}
