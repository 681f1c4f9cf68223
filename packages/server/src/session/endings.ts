/**
 * Every way a host session ends (DESIGN §6): the exit-code kind its pending calls settle with, the
 * `toolwire: <reason>` line on their stderr (naming the close code), and what happens to the socket.
 */
import { CloseCode, type Failure } from '@toolwire/protocol';
import { describeClose } from './close-codes.js';

/** How a session ends. */
export interface Ending {
  /** Kind of every pending call's capture: `unavailable` (69) or `protocol` (76). */
  kind: Failure;
  /** The stderr reason of those captures and the log line. */
  reason: string;
  /** Close the socket with this code and reason text (when still open). */
  close?: { code: number; text: string };
  /** Destroy the socket without a closing handshake. */
  terminate?: boolean;
  /** The close code the peer sent or the socket saw (a disconnect), for the log line. */
  code?: number;
}

const who = (host: string): string => (host === '' ? 'host' : `host ${host}`);

/** The host broke the protocol (garbage, binary, oversize, state, too many bad frames) → 76, close `code`. */
export function violation(host: string, code: number, reason: string): Ending {
  return { kind: 'protocol', reason: `protocol violation by ${who(host)}: ${reason} (close ${describeClose(code)})`, close: { code, text: reason } };
}

/** The socket closed (FIN/RST, peer close, terminate) → 69. */
export function disconnected(host: string, code: number, peerReason: string): Ending {
  return { kind: 'unavailable', reason: `${who(host)} disconnected (close ${describeClose(code)}${peerReason ? `: ${peerReason}` : ''})`, code };
}

/** A newer connection of the same identity took over → 69, close 4000. */
export function replaced(host: string): Ending {
  return {
    kind: 'unavailable',
    reason: `${who(host)} was replaced by a newer connection (close ${describeClose(CloseCode.REPLACED)})`,
    close: { code: CloseCode.REPLACED, text: 'replaced by a newer connection' },
  };
}

/** The host's token was removed or rotated by a config reload → 69, close 1008. */
export function revoked(host: string): Ending {
  return {
    kind: 'unavailable',
    reason: `${who(host)} token was revoked (close ${describeClose(CloseCode.POLICY_VIOLATION)})`,
    close: { code: CloseCode.POLICY_VIOLATION, text: 'token revoked' },
  };
}

/** The server is closing → 69, close 1001. */
export function shutdown(): Ending {
  return {
    kind: 'unavailable',
    reason: `server shutting down (close ${describeClose(CloseCode.GOING_AWAY)})`,
    close: { code: CloseCode.GOING_AWAY, text: 'server shutting down' },
  };
}

/** The peer did not complete the closing handshake in time → socket destroyed. */
export function terminated(): Ending {
  return { kind: 'unavailable', reason: 'server shutting down (connection terminated)', terminate: true };
}

/** No pong since the previous ping → 69, socket destroyed (`heartbeatMs` in ms). */
export function lost(host: string, heartbeatMs: number): Ending {
  return {
    kind: 'unavailable',
    reason: `${who(host)} lost: no pong within ${heartbeatMs} ms (heartbeat); connection terminated`,
    terminate: true,
  };
}

/** No `hello` within `helloTimeoutMs` (ms) → close 1008. */
export function helloTimeout(helloTimeoutMs: number): Ending {
  const reason = `no hello within ${helloTimeoutMs} ms`;
  return { kind: 'unavailable', reason, close: { code: CloseCode.POLICY_VIOLATION, text: reason } };
}

/** A `hello` refused by policy (loopback dev name) → close `code`. */
export function refused(code: number, reason: string): Ending {
  return { kind: 'unavailable', reason, close: { code, text: reason } };
}

/** A bug of ours while handling the connection → 69, close 1011. */
export function internalError(host: string): Ending {
  return {
    kind: 'unavailable',
    reason: `internal server error while handling ${who(host)} (close ${describeClose(CloseCode.INTERNAL_ERROR)})`,
    close: { code: CloseCode.INTERNAL_ERROR, text: 'internal error' },
  };
}
