/**
 * The status snapshot (issue 16): connected hosts with their tools, calls in flight and recently
 * finished calls, as plain JSON for the status page, its live feed and `toolwire status --json`.
 * Times are ms since the epoch; `at` is when the snapshot was taken (the page computes "running
 * for" from it, so a snapshot that did not change is not sent again).
 */
import type { HostInfo } from '../router/listing.js';
import type { RegisteredTool } from '../registry/registry.js';
import type { RoutedCall } from '../seam.js';
import type { CallBoard, FinishedCall } from './call-board.js';

/** Calls in flight listed in one snapshot at most (`callsInFlight` counts them all). */
export const MAX_LISTED_CALLS = 500;
/** Characters of a tool's description kept in a snapshot (its first line). */
export const MAX_DESCRIPTION_CHARS = 200;

/** One advertised tool. */
export interface ToolStatus {
  /** The exposed name (what callers call). */
  name: string;
  /** The name on its host. */
  tool: string;
  /** First line of the description, at most 200 characters. */
  description?: string;
  /** Human title, when the host advertised one. */
  title?: string;
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`, …), when the host advertised them. */
  annotations?: Record<string, unknown>;
}

/** One connected host. */
export interface HostStatus {
  name: string;
  /** The peer's address as the server's socket saw it. */
  remote?: string;
  connectedAt: number;
  /** Last answered heartbeat ping; absent before the first. */
  lastHeartbeatAt?: number;
  /** Wire protocol version (1, 2). */
  protocol?: number;
  /** Calls pending on this host. */
  inFlight: number;
  /** In a cluster: the node the host is connected to (DESIGN §10); absent on a single node. */
  node?: string;
  tools: ToolStatus[];
}

/** One call in flight. */
export interface CallStatus {
  id: string;
  /** The caller (agent id). */
  agent: string;
  tool: string;
  host?: string;
  /** In a cluster: the node of its host; absent on a single node. */
  node?: string;
  startedAt: number;
  /** Output bytes received so far. */
  bytes: number;
}

/** The whole picture. */
export interface StatusSnapshot {
  at: number;
  /** In a cluster: this node's id (the one that answered); absent on a single node. */
  node?: string;
  /** In a cluster: every node heard from within the loss bound, this one included, sorted. */
  nodes?: string[];
  hosts: HostStatus[];
  /** Calls in flight, oldest first, at most {@link MAX_LISTED_CALLS}. */
  calls: CallStatus[];
  /** Calls in flight in all. */
  callsInFlight: number;
  /** Finished calls, newest first (`statusRecentCalls` at most). */
  recent: FinishedCall[];
}

/** What the snapshot reads from the router. */
export interface StatusRouter {
  hosts(): HostInfo[];
  toolsOf(host: string): readonly RegisteredTool[];
  /** Output bytes so far of the calls pending on hosts, by routed call. */
  outputBytes(): Map<RoutedCall, number>;
}

/** This node in a cluster, as the snapshot shows it. */
export interface StatusCluster {
  /** This node's id. */
  node: string;
  /** The other nodes heard from within the loss bound. */
  peers(): string[];
}

/** Take a snapshot now; `cluster` when this server is a cluster node (hosts and calls then carry their node). */
export function statusSnapshot(router: StatusRouter, board: CallBoard, cluster?: StatusCluster): StatusSnapshot {
  const hosts = router.hosts().map((info): HostStatus => {
    const host: HostStatus = { name: info.name, connectedAt: info.connectedAt.getTime(), inFlight: info.inFlight, tools: router.toolsOf(info.name).map(toolStatus) };
    if (cluster !== undefined) host.node = info.node ?? cluster.node;
    if (info.remote !== undefined) host.remote = info.remote;
    if (info.lastHeartbeatAt !== undefined) host.lastHeartbeatAt = info.lastHeartbeatAt.getTime();
    if (info.protocol !== undefined) host.protocol = info.protocol;
    return host;
  });
  const live = board.live(MAX_LISTED_CALLS);
  const bytes = live.length > 0 ? router.outputBytes() : undefined;
  const calls = live.map((c): CallStatus => {
    const call: CallStatus = { id: c.id, agent: c.agent, tool: c.tool, startedAt: c.startedAt, bytes: (c.routed && bytes?.get(c.routed)) ?? 0 };
    if (c.host !== undefined) call.host = c.host;
    const node = c.routed?.node ?? c.node;
    if (node !== undefined) call.node = node;
    return call;
  });
  const snapshot: StatusSnapshot = { at: Date.now(), hosts, calls, callsInFlight: board.size, recent: board.recent() };
  if (cluster !== undefined) {
    snapshot.node = cluster.node;
    snapshot.nodes = [...new Set([cluster.node, ...cluster.peers()])].sort();
  }
  return snapshot;
}

/** A registered tool as the snapshot shows it; `title` and `annotations` when its spec carries them (MCP tool metadata). */
function toolStatus(registered: RegisteredTool): ToolStatus {
  const spec = registered.spec as RegisteredTool['spec'] & { title?: unknown; annotations?: unknown };
  const tool: ToolStatus = { name: registered.exposed, tool: spec.name };
  if (typeof spec.description === 'string' && spec.description.length > 0) {
    tool.description = (spec.description.split('\n', 1)[0] ?? '').slice(0, MAX_DESCRIPTION_CHARS);
  }
  if (typeof spec.title === 'string') tool.title = spec.title;
  if (typeof spec.annotations === 'object' && spec.annotations !== null && !Array.isArray(spec.annotations)) {
    tool.annotations = spec.annotations as Record<string, unknown>;
  }
  return tool;
}
