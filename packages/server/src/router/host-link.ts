/**
 * What the router needs from one connected host session. `HostSession` implements it; tests may
 * substitute a fake. The router never touches sockets itself.
 */
import type { RoutedCall, RoutedCapture } from '../seam.js';

/** One bound host connection, as seen by the router. */
export interface HostLink {
  /** The host identity (from the token, or `hello.name` in loopback dev mode). */
  readonly host: string;
  /**
   * The server node the host is connected to, for a host on another node of a cluster
   * (`cluster/remote-host-link.ts`); absent for a host connected to this node.
   */
  readonly node?: string | undefined;
  /** The peer's address as the socket saw it (e.g. `127.0.0.1`, `::ffff:10.0.0.5`), when known. */
  readonly remote?: string | undefined;
  /** When the connection was upgraded. */
  readonly connectedAt: Date;
  /** Calls sent and not yet settled (including stopped calls within their cancel grace). */
  readonly inFlight: number;
  /** True while calls may be sent (hello done, not closing). */
  readonly isOpen: boolean;
  /**
   * Send `call` to the host as tool `tool` (its bare name) and settle it: the host's result, or a
   * synthetic capture (69, 75, 76, 124, 130). Never rejects.
   */
  call(tool: string, call: RoutedCall): Promise<RoutedCapture>;
  /** The wire protocol version of the connection (1 or 2), when known. */
  readonly protocol?: number;
  /** When the host last answered a heartbeat ping, when known. */
  readonly lastHeartbeatAt?: Date | undefined;
  /** Stop the pending call answering `call` (→ 130, as its signal aborting would); false when not pending. Optional. */
  stop?(call: RoutedCall): boolean;
  /**
   * Several calls to this host follow in this tick (a batch from another node): hold their frames
   * and send them together at the end of the tick. Optional.
   */
  holdFrames?(): void;
  /** Add the output bytes received so far of each pending call, by routed call, to `into`. Optional. */
  outputBytes?(into: Map<RoutedCall, number>): void;
  /** A newer connection of the same identity took over: close 4000, pending calls → 69. Idempotent. */
  replace(): void;
}
