/** The events a tool host emits, with their arguments: the `EventEmitter` map of `ToolHost` (`tool-host.ts`). */
import type { AdvertisedMessage, WelcomeMessage } from '@toolwire/protocol';
import type { HostReplacedError, ServerRefusedError } from './errors.js';

/** Events of a `ToolHost` and their arguments. */
export interface ToolHostEvents {
  /** A connection was accepted: the server's `welcome` (identity, heartbeat, limits). */
  connected: [welcome: WelcomeMessage];
  /** The server's answer to an `advertise` (after every connect, and after the tool set changed while connected). */
  advertised: [advertised: AdvertisedMessage];
  /** An upgraded connection ended; its calls were aborted. `code` 1006 when lost without a close frame. */
  disconnected: [info: { code: number; reason: string }];
  /**
   * A dial failed (unreachable, HTTP 5xx or 429, a refusal below) or a connection was dropped for a
   * fault (heartbeat lost, no welcome, bad frame, closed by the server before welcome), or — a
   * {@link HostReplacedError} — the server closed the connection with 4000 because a newer
   * connection with the same token took over. Emitted only when someone listens; otherwise logged
   * (a replacement or refusal at level error, the rest at warn).
   */
  error: [error: Error];
  /**
   * The host stopped reconnecting on its own, for good: a {@link HostReplacedError} (close 4000),
   * a {@link TokenRefusedError} (HTTP 401 at the upgrade), or another {@link ServerRefusedError}
   * (HTTP 403 origin, another 4xx, a TLS failure). Follows the `error` report of the same error.
   * Only network failures, HTTP 5xx and 429 (after its `Retry-After`) are retried.
   */
  stopped: [error: HostReplacedError | ServerRefusedError];
}
