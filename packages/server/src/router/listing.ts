/**
 * What the router reports about the hosts bound to it (the status page, `/healthz`, a cluster's
 * state pages): one entry per link, read from the links and the registry at the time of asking.
 */
import type { ToolSpec } from '@toolwire/protocol';
import type { ToolRegistry } from '../registry/registry.js';
import type { HostLink } from './host-link.js';

/** One connected host as `hosts()` reports it. `tools` are exposed names; `inFlight` counts pending calls. */
export interface HostInfo {
  name: string;
  tools: string[];
  inFlight: number;
  connectedAt: Date;
  /** The peer's address, when known. */
  remote?: string;
  /** The wire protocol version of the connection (1 or 2), when known. */
  protocol?: number;
  /** When the host last answered a heartbeat ping, when known. */
  lastHeartbeatAt?: Date;
  /** The cluster node the host is connected to; absent for this node. */
  node?: string;
}

/** A host connected to this node with the tool specs it advertised (what a cluster replicates). */
export interface LocalHost {
  host: string;
  remote?: string | undefined;
  connectedAt: Date;
  tools: ToolSpec[];
}

/** For {@link Router.hosts}: each bound link with its exposed tool names, pending call count and connect time. */
export function hostInfos(links: ReadonlyMap<string, HostLink>, registry: ToolRegistry): HostInfo[] {
  return [...links.values()].map((link) => {
    const info: HostInfo = { name: link.host, tools: registry.namesOf(link.host), inFlight: link.inFlight, connectedAt: link.connectedAt };
    if (link.remote !== undefined) info.remote = link.remote;
    if (link.protocol !== undefined) info.protocol = link.protocol;
    if (link.lastHeartbeatAt !== undefined) info.lastHeartbeatAt = link.lastHeartbeatAt;
    if (link.node !== undefined) info.node = link.node;
    return info;
  });
}

/** For {@link Router.localHosts}: the links of this node (not of other cluster nodes) with their accepted tool specs. */
export function localHostsOf(links: ReadonlyMap<string, HostLink>, registry: ToolRegistry): LocalHost[] {
  const out: LocalHost[] = [];
  for (const link of links.values()) {
    if (link.node !== undefined) continue;
    const tools: ToolSpec[] = [];
    for (const name of registry.namesOf(link.host)) {
      const tool = registry.lookup(name);
      if (tool !== undefined) tools.push(tool.spec);
    }
    out.push({ host: link.host, remote: link.remote, connectedAt: link.connectedAt, tools });
  }
  return out;
}
