/**
 * Completed calls aggregated per `tool`/`host` pair for `/metrics` (issue 16): the per-call work is
 * one `Map` lookup (a cached series per pair), one bucket search and a few additions — no label
 * objects, no label hashing, no exemplar object unless the call has trace context. prom-client reads
 * the aggregates only when scraped: `toolwire_calls` through its `collect()`, the duration histogram
 * through {@link CallDurationHistogram}. The number of series is bounded by what the labels are
 * bounded by (advertised tool names, `(other)`, connected host identities).
 */
import { Histogram, type MetricType, type OpenMetricsContentType, type Registry } from 'prom-client';

/** Longest exemplar label set OpenMetrics allows (names and values together), characters. */
const MAX_EXEMPLAR_CHARS = 128;

/** The last traced call that fell in one bucket: what OpenMetrics prints after the bucket's sample. */
export interface BucketExemplar {
  labelSet: Record<string, string>;
  /** The call's duration, seconds. */
  value: number;
  /** When it was observed, seconds since the epoch (OpenMetrics' exemplar timestamp). */
  timestamp: number;
}

/** The aggregates of one `tool`/`host` pair (and, in a cluster, the host's `node`). */
export interface Series {
  readonly tool: string;
  readonly host: string;
  /** In a cluster: the node of the host that answered (DESIGN §10); absent on a single node. */
  readonly node: string | undefined;
  /** Calls by exit code (0–255). */
  readonly byExitCode: Map<number, number>;
  /** Calls per bucket: `buckets[i]` counts durations in (bounds[i-1], bounds[i]]; the last entry counts those above every bound. */
  readonly buckets: number[];
  /** Exemplars per bucket (same indexes as `buckets`), traced calls only. */
  readonly exemplars: (BucketExemplar | undefined)[];
  /** Sum of durations, seconds. */
  sum: number;
  count: number;
}

/** The per-pair aggregates of one server. */
export class CallSeries {
  /** Upper bounds of the duration buckets, seconds, ascending. */
  readonly bounds: readonly number[];
  readonly #byPair = new Map<string, Series>();
  /** The series of the last call recorded (calls of one tool on one host come in runs): looked up first. */
  #last: Series | undefined;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
  }

  /**
   * Count one call. `seconds`: its duration. `callId`/`traceId`: the exemplar of its bucket, kept
   * only when `traceId` is given (a call without trace context has nothing to join a trace to).
   */
  record(tool: string, host: string, node: string | undefined, exitCode: number, seconds: number, callId: string, traceId: string | undefined): void {
    let series = this.#last;
    if (series === undefined || series.tool !== tool || series.host !== host || series.node !== node) {
      // Neither a tool name, a host identity nor a node id holds a newline.
      const key = node === undefined ? `${tool}\n${host}` : `${tool}\n${host}\n${node}`;
      series = this.#byPair.get(key);
      if (series === undefined) {
        series = { tool, host, node, byExitCode: new Map(), buckets: new Array<number>(this.bounds.length + 1).fill(0), exemplars: [], sum: 0, count: 0 };
        this.#byPair.set(key, series);
      }
      this.#last = series;
    }
    series.byExitCode.set(exitCode, (series.byExitCode.get(exitCode) ?? 0) + 1);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i += 1;
    series.buckets[i]! += 1;
    series.sum += seconds;
    series.count += 1;
    if (traceId !== undefined) series.exemplars[i] = { labelSet: exemplarOf(callId, traceId), value: seconds, timestamp: Date.now() / 1000 };
  }

  /** Every series, in the order the pairs first completed a call. */
  all(): IterableIterator<Series> {
    return this.#byPair.values();
  }
}

/** An exemplar's labels: `trace_id`, and `call_id` when both fit OpenMetrics' 128 characters. */
export function exemplarOf(id: string, traceId: string): Record<string, string> {
  const labels: Record<string, string> = { trace_id: traceId };
  if ('trace_id'.length + traceId.length + 'call_id'.length + id.length <= MAX_EXEMPLAR_CHARS) labels.call_id = id;
  return labels;
}

/** One sample as prom-client's registry prints it (`labels` first, then `sharedLabels`). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
  exemplar: BucketExemplar | undefined;
}

/**
 * The call duration histogram, read from a {@link CallSeries} when scraped (it is never observed
 * directly): the same samples, labels and exemplars a prom-client `Histogram` with `tool` and `host`
 * labels (and `node` in a cluster) prints.
 */
export class CallDurationHistogram extends Histogram<'tool' | 'host' | 'node'> {
  readonly #name: string;
  readonly #help: string;
  readonly #series: CallSeries;

  constructor(name: string, help: string, series: CallSeries, registry: Registry<OpenMetricsContentType>) {
    super({ name, help, labelNames: ['tool', 'host', 'node'], buckets: [...series.bounds], enableExemplars: true, registers: [registry] });
    this.#name = name;
    this.#help = help;
    this.#series = series;
  }

  /** What the registry prints (prom-client calls this instead of `get()` when rendering text). */
  getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; values: Sample[]; aggregator: 'sum' }> {
    const values: Sample[] = [];
    const name = this.#name;
    const bucket = `${name}_bucket`;
    const bounds = this.#series.bounds;
    for (const s of this.#series.all()) {
      const shared: Record<string, string> = s.node === undefined ? { tool: s.tool, host: s.host } : { tool: s.tool, host: s.host, node: s.node };
      let acc = 0;
      for (let i = 0; i < bounds.length; i++) {
        acc += s.buckets[i]!;
        values.push({ labels: { le: bounds[i]! }, sharedLabels: shared, value: acc, metricName: bucket, exemplar: s.exemplars[i] });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: s.count, metricName: bucket, exemplar: s.exemplars[bounds.length] });
      values.push({ labels: {}, sharedLabels: shared, value: s.sum, metricName: `${name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: shared, value: s.count, metricName: `${name}_count`, exemplar: undefined });
    }
    return Promise.resolve({ name, help: this.#help, type: 'histogram', values, aggregator: 'sum' });
  }

  /** The samples as objects (`Registry.getMetricsAsJSON()`), labels merged. */
  override async get(): ReturnType<Histogram<'tool' | 'host' | 'node'>['get']> {
    const data = await this.getForPromString();
    // prom-client declares `MetricType` as a numeric enum, but its metrics carry the type as a string.
    return {
      ...data,
      type: data.type as unknown as MetricType,
      collect: () => undefined,
      values: data.values.map((v) => ({ value: v.value, metricName: v.metricName, labels: { ...v.sharedLabels, ...v.labels } })),
    };
  }
}
