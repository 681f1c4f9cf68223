/**
 * What the executor tells about each call it answered (issue 16): the one info line of a completed
 * call (`observe/call-lines.ts`) and the metrics of completed, declined and refused calls (the
 * server's observer, `observe/metrics.ts`). With neither (a silent logger, no metrics) a call costs
 * one level check here and builds no fields.
 */
import type { Capture } from '@toolwire/protocol';
import { CallLines, type CallLineFields } from '../observe/call-lines.js';
import type { CallRefusal } from '../observe/metrics.js';
import { traceIdOf } from '../observe/tracing.js';
import type { Logger } from '../options.js';
import type { InjectedTool } from '../seam.js';
import { shown } from './reason-text.js';
import type { ExecutorDeps } from './request.js';
import { toolIndex } from './validate.js';

/** The call lines and metrics of one executor. */
export class CallReport {
  readonly #logger: Logger;
  readonly #observer: ExecutorDeps['observer'];
  readonly #lines: CallLines;
  /** The tools now advertised: whether a tool name is known (a metric label) is read from them. */
  readonly #tools: () => readonly InjectedTool[];

  constructor(logger: Logger, observer: ExecutorDeps['observer'], tools: () => readonly InjectedTool[]) {
    this.#logger = logger;
    this.#observer = observer;
    this.#lines = new CallLines(logger);
    this.#tools = tools;
  }

  /**
   * The one info line of a completed call (issue 16: `call`, `tool`, `host`, `agent`, `exitCode`,
   * `failure`, `ms`, `bytesOut`; `wire` and `trace` when there are; in a cluster `node`, the node
   * of the host that answered), and its metrics. Never the input.
   */
  ended(
    id: string,
    tool: string,
    agent: string,
    host: string | undefined,
    node: string | undefined,
    wire: string | undefined,
    capture: Capture,
    ms: number,
    traceparent: string | undefined,
  ): void {
    const observer = this.#observer;
    const lines = this.#lines;
    const logging = lines.enabled;
    if (observer === undefined && !logging) return; // nothing to tell: no fields built
    const bytesOut = capture.stdout.byteLength + capture.stderr.byteLength;
    const traceId = traceIdOf(traceparent);
    if (logging) {
      const fields: CallLineFields = { call: id, exitCode: capture.exitCode, ms, bytesOut };
      if (wire !== undefined) fields.wire = wire;
      if (node !== undefined) fields.node = node;
      if (capture.failure !== undefined) fields.failure = capture.failure;
      if (traceId !== undefined) fields.trace = traceId;
      lines.ended(shown(tool), host, agent, fields);
    }
    if (observer === undefined) return;
    const known = host !== undefined || toolIndex(this.#tools()).has(tool);
    try {
      observer.callEnded({ id, tool, known, host, node, exitCode: capture.exitCode, ms, bytesOut, traceId });
    } catch (error) {
      this.#logger.error({ err: error, call: id }, 'call observer failed');
    }
  }

  /** Count a call declined (grant gate) or refused (tool control) before it ran, in the metrics. */
  refused(outcome: CallRefusal['outcome'], tool: string): void {
    const observer = this.#observer;
    if (observer === undefined) return;
    try {
      observer.callRefused({ outcome, tool, known: toolIndex(this.#tools()).has(tool) });
    } catch (error) {
      this.#logger.error({ err: error, tool }, 'call observer failed');
    }
  }
}
