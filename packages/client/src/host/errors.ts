/**
 * Errors a {@link ToolHost} reports through its `error` event (or logs when nobody listens).
 */
import { CloseCode } from '@toolwire/protocol';

/**
 * The server closed this host's connection with 4000 (REPLACED, DESIGN §5): a newer connection with
 * the same host identity — the same token — is live. The host stops reconnecting, because dialing
 * again would replace the other connection in turn and the two would flap forever.
 */
export class HostReplacedError extends Error {
  /** The close code that ended the connection: 4000. */
  readonly closeCode = CloseCode.REPLACED;

  constructor() {
    super('replaced by a newer connection of the same host identity: another host is using this token');
    this.name = 'HostReplacedError';
  }
}
