/**
 * The host's in-process tools as a {@link ToolSource} (DESIGN §7 "In-process tools"): a handler is
 * called with the input and the call's `ctx`; a synchronous answer is known at once.
 */
import type { ToolSpec } from '@toolwire/protocol';
import { capCapture } from '../calls/capture-cap.js';
import { awaitHandler, startHandler } from '../calls/in-process.js';
import type { ToolHandler } from '../types.js';
import type { RunStart, SourceCall, SourceTool, ToolSource } from './source.js';

/** An in-process tool. */
export interface HandlerTool extends SourceTool {
  readonly handler: ToolHandler;
}

/** The runner of in-process tools; which tools exist is kept by the host's `ToolSet` (`list`). */
export class InProcessSource implements ToolSource {
  readonly label = 'in-process';
  readonly #list: () => readonly SourceTool[];

  constructor(list: () => readonly SourceTool[]) {
    this.#list = list;
  }

  /** A tool of this source. */
  tool(name: string, spec: ToolSpec, handler: ToolHandler): HandlerTool {
    return { name, spec, source: this, handler };
  }

  tools(): readonly SourceTool[] {
    return this.#list();
  }

  run(tool: SourceTool, input: unknown, { ctx, abort, settings }: SourceCall): RunStart {
    const started = startHandler((tool as HandlerTool).handler, input, ctx, abort, ctx);
    if (!('pending' in started)) return started;
    const work = awaitHandler(started.pending, settings.cancelGraceMs + settings.drainMs, abort, ctx).then((capture) =>
      ctx.output === undefined ? capCapture(capture, settings.capBytes) : ctx.output.close(capture),
    );
    return { work };
  }

  onChange(): void {
    // The host's ToolSet changes these tools itself and re-advertises.
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
