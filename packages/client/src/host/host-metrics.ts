/**
 * A tool host's metrics (issue 16, `ToolHostOptions.metrics`, `toolwire host --metrics-listen`): the
 * same families as the server's for the host's side, in a prom-client registry of its own, as
 * OpenMetrics text. Labels are bounded: `tool` is a tool this host registered (a name it does not
 * have counts as `(other)`), `exit_code` 0–255; call ids and trace ids only as exemplars.
 */
import { createRequire } from 'node:module';
import type { Counter, Histogram, OpenMetricsContentType, Registry } from 'prom-client';

type PromClient = typeof import('prom-client');
let promClient: PromClient | undefined;

/**
 * prom-client, loaded by the first {@link HostMetrics}: a host without metrics (the default) does
 * not load it (~1.7 MiB of private memory at start; bench/README.md, session 16). Synchronous
 * (`require`, prom-client is CommonJS), so the host's constructor stays synchronous.
 */
function loadPromClient(): PromClient {
  return (promClient ??= createRequire(import.meta.url)('prom-client') as PromClient);
}

/** Upper bounds of the call duration histogram, seconds (as the server's). */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The `tool` label of a call to a name this host does not have. */
export const OTHER_TOOL = '(other)';
/** Longest exemplar label set OpenMetrics allows, characters. */
const MAX_EXEMPLAR_CHARS = 128;

/** One answered call as the host reports it. */
export interface HostCallEnd {
  id: string;
  tool: string;
  /** False when the host has no tool of that name (answered 127). */
  known: boolean;
  exitCode: number;
  /** ms */
  ms: number;
  traceId: string | undefined;
}

/** What the scrape-time gauges read. */
export interface HostMetricSources {
  inFlight: () => number;
  connected: () => boolean;
  toolsAdvertised: () => number;
}

/** The metric families of one tool host. */
export class HostMetrics {
  readonly registry: Registry<OpenMetricsContentType>;
  readonly #calls: Counter<'tool' | 'exit_code'>;
  readonly #duration: Histogram<'tool'>;
  readonly #rejected: Counter;

  constructor(sources: HostMetricSources) {
    const { Counter, Gauge, Histogram, Registry } = loadPromClient();
    this.registry = new Registry<OpenMetricsContentType>();
    this.registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const registers = [this.registry];
    this.#calls = new Counter({
      name: 'toolwire_host_calls',
      help: 'Calls answered by this host, by tool and exit code.',
      labelNames: ['tool', 'exit_code'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'toolwire_host_call_duration_seconds',
      help: 'Call duration on this host from arrival to answer, seconds (exemplars: call_id, trace_id).',
      labelNames: ['tool'],
      buckets: DURATION_BUCKETS,
      enableExemplars: true,
      registers,
    });
    this.#rejected = new Counter({ name: 'toolwire_host_advertise_rejected', help: 'Tools of this host the server rejected.', registers });
    new Gauge({
      name: 'toolwire_host_calls_in_flight',
      help: 'Calls running or waiting to run on this host.',
      registers,
      collect() {
        this.set(sources.inFlight());
      },
    });
    new Gauge({
      name: 'toolwire_host_connected',
      help: '1 while this host is connected to its server (welcome received).',
      registers,
      collect() {
        this.set(sources.connected() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'toolwire_host_tools_advertised',
      help: 'Tools the server accepted in its last advertised reply.',
      registers,
      collect() {
        this.set(sources.toolsAdvertised());
      },
    });
  }

  /** Count one answered call; its duration gets an exemplar (trace_id, call_id) only when it has trace context. */
  callEnded(end: HostCallEnd): void {
    const tool = end.known ? end.tool : OTHER_TOOL;
    this.#calls.inc({ tool, exit_code: end.exitCode });
    const exemplarLabels: Record<string, string> = {}; // none: prom-client keeps no exemplar
    if (end.traceId !== undefined) {
      exemplarLabels.trace_id = end.traceId;
      if ('trace_id'.length + end.traceId.length + 'call_id'.length + end.id.length <= MAX_EXEMPLAR_CHARS) exemplarLabels.call_id = end.id;
    }
    this.#duration.observe({ labels: { tool }, value: end.ms / 1000, exemplarLabels });
  }

  /** Count the entries of an `advertised` reply the server rejected. */
  rejected(count: number): void {
    if (count > 0) this.#rejected.inc(count);
  }

  /** The OpenMetrics text and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
