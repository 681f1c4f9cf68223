/**
 * `/metrics` (issue 16): the server's metric families in a prom-client registry of its own (two
 * servers in one process do not mix), in the OpenMetrics text format (what Prometheus scrapes; it
 * carries exemplars). Per call a few additions into the call's tool/host series ({@link ServerMetrics.callEnded}, `call-series.ts`);
 * everything else is read when scraped. Labels are bounded: `tool` is an advertised name (or
 * `(other)` for a name no host advertised), `host` a connected identity, `exit_code` 0–255, and in
 * a cluster `node`, the node of the host that answered (a cluster id; one per host at a time, so a
 * host adds a series only when it moves to another node; absent on a single node); call ids and
 * trace ids appear only as exemplars of the duration histogram.
 */
import { Counter, Gauge, type OpenMetricsContentType, Registry } from 'prom-client';
import { CallDurationHistogram, CallSeries } from './call-series.js';
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

/** A call that never ran: declined by the grant gate or refused by tool control. */
export interface CallRefusal {
  outcome: 'declined' | 'refused';
  tool: string;
  /** True when the name is advertised; else counted under `(other)`. */
  known: boolean;
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

/** The metric families of one server. */
export class ServerMetrics {
  /** The registry; `metrics()` renders it. */
  readonly registry = openMetricsRegistry();
  readonly #series = new CallSeries(DURATION_BUCKETS);
  readonly #refused: Counter<'tool' | 'outcome'>;
  #bytesOut = 0;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    const total = (name: string, help: string, read: () => number): void => {
      new Counter({ name, help, registers, collect: countInto(read) });
    };
    const series = this.#series;
    new Counter({
      name: 'toolwire_calls',
      help: "Calls completed, by tool, host, exit code and (in a cluster) the host's node.",
      labelNames: ['tool', 'host', 'exit_code', 'node'],
      registers,
      collect() {
        this.reset();
        for (const s of series.all())
          for (const [code, n] of s.byExitCode) {
            this.inc(s.node === undefined ? { tool: s.tool, host: s.host, exit_code: code } : { tool: s.tool, host: s.host, node: s.node, exit_code: code }, n);
          }
      },
    });
    new CallDurationHistogram(
      'toolwire_call_duration_seconds',
      'Call duration from admission to capture, seconds (exemplars of traced calls: trace_id, call_id).',
      series,
      this.registry,
    );
    this.#refused = new Counter({
      name: 'toolwire_calls_refused',
      help: 'Calls that never ran, by tool and outcome: declined (the grant gate) or refused (tool control).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    total('toolwire_call_output_bytes', 'stdout and stderr bytes of completed calls.', () => this.#bytesOut);
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({ name, help, registers, collect: readInto(read) });
    };
    gauge('toolwire_calls_in_flight', 'Calls admitted and not yet completed.', sources.inFlight);
    gauge('toolwire_hosts_connected', 'Tool hosts connected (hello done).', sources.hosts);
    gauge('toolwire_tools_advertised', 'Tools advertised by connected hosts.', sources.tools);
    gauge('toolwire_mcp_sessions', 'Open MCP sessions.', sources.mcpSessions);
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

  /** Count one completed call (hot path: additions into its tool/host series, read when scraped). */
  callEnded(end: CallEnd): void {
    this.#series.record(end.known ? end.tool : OTHER_TOOL, end.host ?? '', end.node, end.exitCode, end.ms / 1000, end.id, end.traceId);
    this.#bytesOut += end.bytesOut;
  }

  /** Count one call declined or refused before it ran. */
  callRefused(refusal: CallRefusal): void {
    this.#refused.inc({ tool: refusal.known ? refusal.tool : OTHER_TOOL, outcome: refusal.outcome });
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
