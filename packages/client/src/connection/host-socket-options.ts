/**
 * What one tool-host connection (`host-socket.ts`) takes — its options and callbacks — and what it
 * reports: the messages after `welcome`, and how it ended.
 */
import type { AdvertisedMessage, CallMessage, CancelMessage, CreditMessage, HelloMessage, WelcomeMessage } from '@toolwire/protocol';
import type { Logger } from '../types.js';

/** Messages after `welcome`. */
export type SessionMessage = AdvertisedMessage | CallMessage | CancelMessage | CreditMessage;

/** How a connection ended. */
export interface CloseInfo {
  /** True when the upgrade succeeded (a `disconnected`, not a failed dial). */
  opened: boolean;
  /** True when a `welcome` arrived. */
  welcomed: boolean;
  /** WebSocket close code (1006 when the socket was lost without a close frame). */
  code: number;
  reason: string;
  /** HTTP status when the server refused the upgrade (e.g. 401). */
  status?: number;
  /** The refusal's `Retry-After` header, as sent (whole seconds or an HTTP date). */
  retryAfter?: string;
  /** The refusal carried a `WWW-Authenticate` challenge: the server checked the token and did not accept it. */
  challenged?: boolean;
  /** The refusal's text body (its reason, e.g. a 429's "too many failed authentications …"), at most {@link MAX_REASON_BYTES}, one line. */
  body?: string;
  /** The error that ended the connection, when there was one. */
  error?: Error;
}

/** Most bytes of a refusal's body kept as its reason; the rest is discarded. */
export const MAX_REASON_BYTES = 512;

/** Options of one connection. Times in ms, sizes in bytes. */
export interface HostSocketOptions {
  url: string;
  token?: string;
  ca?: string | Buffer;
  hello: HelloMessage;
  /** Largest frame accepted from the server (ws `maxPayload`). */
  maxPayload: number;
  /** Time allowed for the upgrade and for `welcome` after `hello`. */
  welcomeTimeoutMs: number;
  /** Time `close()` waits for the server's close frame before terminating. */
  closeWaitMs: number;
  logger: Logger;
}

/** Callbacks of one connection; `onClose` is called exactly once. */
export interface HostSocketHandlers {
  onWelcome(welcome: WelcomeMessage): void;
  /** `bytes`: the size of the frame that carried `message` (a call's share of the host's input-bytes bound). */
  onMessage(message: SessionMessage, bytes: number): void;
  onClose(info: CloseInfo): void;
}
