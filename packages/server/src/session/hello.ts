/**
 * The `hello` → `welcome` step of a host session (DESIGN §5): which host identity the connection
 * gets, and the `welcome` that announces it with the server's limits.
 */
import { CloseCode, type HelloMessage, NAME_PATTERN, QUALIFIER, type WelcomeMessage } from '@toolwire/protocol';

/**
 * Who the connection is, as decided at the upgrade: a token's host identity, or (loopback dev mode
 * only) a tokenless loopback peer that names itself in `hello.name`.
 */
export type HostIdentity = { kind: 'token'; name: string } | { kind: 'loopback' };

/** Host name a loopback dev host gets when its `hello` carries no `name`. */
export const DEFAULT_DEV_HOST_NAME = 'local';

/** Outcome of a `hello`: the bound host name, or the close code and reason that refuse it. */
export type HelloOutcome = { ok: true; host: string } | { ok: false; closeCode: number; reason: string; fault: boolean };

/**
 * Decide the host name for `hello`:
 * - `protocol` other than `version`, the one the upgrade negotiated (the subprotocol) → close 1002 (a protocol fault);
 * - token identity → the token's name (`hello.name` is ignored: a host never names itself);
 * - loopback dev identity → `hello.name` (default `local`), which must match `[A-Za-z0-9_-]{1,64}`
 *   without `__` and must not be a configured host identity (`reserved`) → else close 1008.
 */
export function acceptHello(hello: HelloMessage, identity: HostIdentity, reserved: (name: string) => boolean, version: number): HelloOutcome {
  if (hello.protocol !== version) {
    return {
      ok: false,
      fault: true,
      closeCode: CloseCode.PROTOCOL_ERROR,
      reason: `hello.protocol ${hello.protocol} is not the version this connection negotiated (${version}, subprotocol toolwire.v${version})`,
    };
  }
  if (identity.kind === 'token') return { ok: true, host: identity.name };
  const name = hello.name ?? DEFAULT_DEV_HOST_NAME;
  if (!NAME_PATTERN.test(name) || name.includes(QUALIFIER)) {
    return { ok: false, fault: false, closeCode: CloseCode.POLICY_VIOLATION, reason: `hello.name must match ${NAME_PATTERN.source} without "${QUALIFIER}"` };
  }
  if (reserved(name)) {
    return { ok: false, fault: false, closeCode: CloseCode.POLICY_VIOLATION, reason: `hello.name "${name}" is a configured host identity; present its token` };
  }
  return { ok: true, host: name };
}

/** The server limits a `welcome` announces. Times in ms, sizes in bytes. */
export interface WelcomeOptions {
  heartbeatMs: number;
  maxPayload: number;
  maxInFlightPerHost: number;
  maxToolsPerHost: number;
  /** Live output (protocol 2): each call's window and the largest chunk, bytes. */
  output: { windowBytes: number; maxChunkBytes: number };
}

/**
 * The `welcome` for host `host` on a connection of protocol `version`: identity, heartbeat interval
 * (ms) and limits; from protocol 2 also `output` (the live-output window and chunk limit).
 */
export function welcomeFor(host: string, options: WelcomeOptions, version: number): WelcomeMessage {
  const welcome: WelcomeMessage = {
    type: 'welcome',
    protocol: version,
    host,
    heartbeatMs: options.heartbeatMs,
    limits: {
      maxPayload: options.maxPayload,
      maxInFlight: options.maxInFlightPerHost,
      maxTools: options.maxToolsPerHost,
    },
  };
  if (version >= 2) welcome.output = { windowBytes: options.output.windowBytes, maxChunkBytes: options.output.maxChunkBytes };
  return welcome;
}
