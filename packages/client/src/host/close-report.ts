/** How a tool host names a connection's end and its server in its log lines and errors. */
import { CloseCode, closeCodeName } from '@toolwire/protocol';
import type { CloseInfo } from '../connection/host-socket-options.js';

/** Close codes by which the server refuses what this host sent: 1002, 1003, 1007, 1008, 1009, 1011. */
export const REFUSAL_CODES: ReadonlySet<number> = new Set([
  CloseCode.PROTOCOL_ERROR,
  CloseCode.UNSUPPORTED_DATA,
  CloseCode.INVALID_PAYLOAD,
  CloseCode.POLICY_VIOLATION,
  CloseCode.MESSAGE_TOO_BIG,
  CloseCode.INTERNAL_ERROR,
]);

/** `close 1002 PROTOCOL_ERROR: <reason>` for logs and errors. */
export function describeClose(info: CloseInfo): string {
  const name = info.code === 1005 ? 'NO_STATUS_RECEIVED' : info.code === 1006 ? 'ABNORMAL_CLOSURE' : closeCodeName(info.code);
  return `close ${info.code} ${name}${info.reason ? `: ${info.reason}` : ''}`;
}

/** The server's address in a host's log lines: `host:port` of its URL (never a user or password in it). */
export function remoteOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
