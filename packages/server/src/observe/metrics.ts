/**
 * `/metrics` (issue 16): the server's metric families in a prom-client registry of its own (two
 * servers in one process do not mix), in the OpenMetrics text format (what Prometheus scrapes; it
 * carries exemplars). Per call one counter and one histogram update ({@link ServerMetrics.callEnded});
 * everything else is read when scraped. Labels are bounded: `tool` is an advertised name (or
 * `(other)` for a name no host advertised), `host` a connected identity, `exit_code` 0–255, and in
 * a cluster `node`, the node of the host that answered (a cluster id; one per host at a time, so a
 * host adds a series only when it moves to another node; absent on a single node); call ids and
 * trace ids appear only as exemplars of the duration histogram.
 */
import { Counter, Gauge, Histogram, type OpenMetricsContentType, Registry } from 'prom-client';
import { REFUSED_FRAME_KINDS, type SessionCounters } from './counters.js';

/** The `tool` label of a call to a name no host advertised (a typo must not add a series). */
export const OTHER_TOOL = '(other)';

/** Upper bounds of the call duration histogram, seconds. */
export const DURATION_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The end of one call, as the executor reports it. */
export interface CallEnd {
  id: string;
  /** The tool name; counted under its own label only when `known`. */
  tool: string;
  /** True when the name was advertised (or answered by a host) when the call ran. */
  known: boolean;
  /** The host that answered, `undefined` when none did. */
  host: string | undefined;
  /** In a cluster: the node of the host that answered (DESIGN §10); `undefined` on a single node or when no host did. */
  node?: string | undefined;
  exitCode: number;
  /** Duration, ms. */
  ms: number;
  /** stdout + stderr bytes of the capture. */
  bytesOut: number;
  /** The call's trace id (32 hex), when it has trace context. */
  traceId: string | undefined;
}

/** What the scrape-time gauges read. */
export interface MetricSources {
  inFlight: () => number;
  hosts: () => number;
  tools: () => number;
  mcpSessions: () => number;
  /** Advertised entries rejected since start. */
  advertiseRejected: () => number;
  /** Failed authentications (host upgrades and MCP requests) since start. */
  authFailures: () => number;
  sessions: SessionCounters;
}

/** Longest exemplar label set OpenMetrics allows (names and values together), characters. */
const MAX_EXEMPLAR_CHARS = 128;

/** The metric families of one server. */
export class ServerMetrics {
  /** The registry; `metrics()` renders it. */
  readonly registry = openMetricsRegistry();
  readonly #calls: Counter<'tool' | 'host' | 'exit_code' | 'node'>;
  readonly #duration: Histogram<'tool' | 'host' | 'node'>;
  readonly #bytesOut: Counter;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.#calls = new Counter({
      name: 'toolwire_calls',
      help: "Calls completed, by tool, host, exit code and (in a cluster) the host's node.",
      labelNames: ['tool', 'host', 'exit_code', 'node'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'toolwire_call_duration_seconds',
      help: 'Call duration from admission to capture, seconds (exemplars: call_id, trace_id).',
      labelNames: ['tool', 'host', 'node'],
      buckets: [...DURATION_BUCKETS],
      enableExemplars: true,
      registers,
    });
    this.#bytesOut = new Counter({ name: 'toolwire_call_output_bytes', help: 'stdout and stderr bytes of completed calls.', registers });
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({ name, help, registers, collect: readInto(read) });
    };
    gauge('toolwire_calls_in_flight', 'Calls admitted and not yet completed.', sources.inFlight);
    gauge('toolwire_hosts_connected', 'Tool hosts connected (hello done).', sources.hosts);
    gauge('toolwire_tools_advertised', 'Tools advertised by connected hosts.', sources.tools);
    gauge('toolwire_mcp_sessions', 'Open MCP sessions.', sources.mcpSessions);
    const total = (name: string, help: string, read: () => number): void => {
      new Counter({ name, help, registers, collect: countInto(read) });
    };
    total('toolwire_advertise_rejected', 'Advertised tool entries rejected.', sources.advertiseRejected);
    total('toolwire_auth_failures', 'Failed authentications (host upgrades and MCP requests).', sources.authFailures);
    total('toolwire_heartbeat_terminations', 'Host connections terminated for a missed heartbeat.', () => sources.sessions.heartbeatTerminations);
    const s = sources.sessions;
    new Counter({
      name: 'toolwire_host_frame_bytes',
      help: 'WebSocket frame payload bytes from (in) and to (out) tool hosts.',
      labelNames: ['direction'],
      registers,
      collect() {
        this.reset();
        this.inc({ direction: 'in' }, s.bytesIn);
        this.inc({ direction: 'out' }, s.bytesOut);
      },
    });
    new Counter({
      name: 'toolwire_frames_refused',
      help: 'Frames from tool hosts refused as protocol violations (exit code 76), by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        for (const kind of REFUSED_FRAME_KINDS) this.inc({ kind }, s.framesRefused[kind]);
      },
    });
  }

  /** Count one completed call (hot path: one counter and one histogram update). */
  callEnded(end: CallEnd): void {
    const tool = end.known ? end.tool : OTHER_TOOL;
    const host = end.host ?? '';
    const node = end.node;
    const labels = node === undefined ? { tool, host } : { tool, host, node };
    this.#calls.inc(node === undefined ? { tool, host, exit_code: end.exitCode } : { tool, host, node, exit_code: end.exitCode });
    this.#duration.observe({ labels, value: end.ms / 1000, exemplarLabels: exemplarOf(end.id, end.traceId) });
    if (end.bytesOut > 0) this.#bytesOut.inc(end.bytesOut);
  }

  /** The OpenMetrics text of every family. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The content type of {@link metrics}. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

/** An exemplar's labels: `trace_id` when there is one, `call_id` when it fits OpenMetrics' 128 characters. */
function exemplarOf(id: string, traceId: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  let used = 0;
  if (traceId !== undefined) {
    labels.trace_id = traceId;
    used = 'trace_id'.length + traceId.length;
  }
  if (used + 'call_id'.length + id.length <= MAX_EXEMPLAR_CHARS) labels.call_id = id;
  return labels;
}

function readInto(read: () => number): (this: Gauge) => void {
  return function (this: Gauge) {
    this.set(read());
  };
}

function countInto(read: () => number): (this: Counter) => void {
  return function (this: Counter) {
    this.reset();
    const n = read();
    if (n > 0) this.inc(n);
  };
}

function openMetricsRegistry(): Registry<OpenMetricsContentType> {
  const registry = new Registry<OpenMetricsContentType>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  return registry;
}
