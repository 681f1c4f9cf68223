/**
 * The host's subprocess tools (manifest commands) as a {@link ToolSource} (DESIGN §7 "Subprocess
 * contract"): each call runs the tool's argv in its own process group (`subprocess/run-command.ts`).
 */
import type { ToolSpec } from '@toolwire/protocol';
import { runCommandTool } from '../subprocess/run-command.js';
import type { CommandSpec } from '../types.js';
import type { RunStart, SourceCall, SourceTool, ToolSource } from './source.js';

/** A subprocess tool, with its own copy of its definition. */
export interface CommandTool extends SourceTool {
  readonly command: CommandSpec;
}

/** The runner of subprocess tools; which tools exist is kept by the host's `ToolSet` (`list`). */
export class CommandSource implements ToolSource {
  readonly label = 'manifest';
  readonly #list: () => readonly SourceTool[];

  constructor(list: () => readonly SourceTool[]) {
    this.#list = list;
  }

  /** A tool of this source (`command` is kept as given: pass a private copy). */
  tool(name: string, spec: ToolSpec, command: CommandSpec): CommandTool {
    return { name, spec, source: this, command, timeoutMs: command.timeoutMs, maxConcurrency: command.maxConcurrency };
  }

  tools(): readonly SourceTool[] {
    return this.#list();
  }

  run(tool: SourceTool, input: unknown, { ctx, settings }: SourceCall): RunStart {
    const { root, cancelGraceMs, drainMs, capBytes, spawnHelper, env } = settings;
    const work = runCommandTool((tool as CommandTool).command, input, ctx, {
      root,
      cancelGraceMs,
      drainMs,
      maxCaptureBytes: capBytes,
      spawnHelper,
      env,
      startBy: Date.now() + ctx.deadlineMs,
      output: ctx.openOutput(),
    });
    return { work };
  }

  onChange(): void {
    // The host's ToolSet changes these tools itself (replaceCommands) and re-advertises.
  }

  close(): Promise<void> {
    return Promise.resolve(); // a running command is ended by its call's abort
  }
}
