/**
 * `toolwire host`'s tool set from its manifest: only tools whose program can be found are
 * advertised, and SIGHUP re-reads the manifest and swaps the set on the live connection (DESIGN §7).
 */
import { type CommandToolSpec, type Logger, type ToolHost, checkExecutable, loadManifest } from '@toolwire/client';
import type { SignalSource } from '../io.js';

/**
 * The tools of `tools` whose `command[0]` can be run (found as the spawn will: the tool's own
 * `env.PATH`, else this process's); each other one is logged at warn, naming the tool and the
 * command, and left out — the model must not be told about a tool that cannot run.
 */
export async function runnableTools(tools: readonly CommandToolSpec[], root: string, logger: Logger): Promise<CommandToolSpec[]> {
  const problems = await Promise.all(tools.map((tool) => checkExecutable(tool, { root })));
  return tools.filter((tool, i) => {
    const problem = problems[i];
    if (problem !== undefined) logger.warn({ tool: tool.name, command: tool.command }, `toolwire: tool ${tool.name} is not advertised: ${problem}`);
    return problem === undefined;
  });
}

/** What {@link reloadOnHangup} needs: the manifest and how it was read the first time. */
export interface ReloadSource {
  manifest: string;
  /** Variables for `${VAR}` expansion. */
  env: NodeJS.ProcessEnv;
  /** The host's `--root` (absolute). */
  root: string;
}

/**
 * On each SIGHUP: re-read the manifest and make it the host's tool set (`replaceCommands`: one
 * `advertise`, calls in flight finish as they started), logging the names added, removed and
 * changed. A manifest that no longer loads is logged at error (one line with the reason) and the
 * old set stays. Reloads run one at a time, in order. Returns a function that removes the listener.
 */
export function reloadOnHangup(signals: SignalSource, host: ToolHost, source: ReloadSource, logger: Logger): () => void {
  let chain = Promise.resolve();
  const reload = async (): Promise<void> => {
    try {
      const tools = await runnableTools(await loadManifest(source.manifest, source.env), source.root, logger);
      const change = host.replaceCommands(tools);
      if (tools.length === 0) logger.warn({ manifest: source.manifest }, 'toolwire: the manifest has no tools');
      logger.info({ manifest: source.manifest, ...change, tools: tools.length }, 'toolwire: manifest reloaded');
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      logger.error({ manifest: source.manifest, reason }, `toolwire: manifest reload failed, the previous tools stay: ${reason}`);
    }
  };
  const onHup = (): void => {
    chain = chain.then(reload);
  };
  signals.on('SIGHUP', onHup);
  return () => signals.off('SIGHUP', onHup);
}

/** Without a manifest (`--mcp-config` alone) a SIGHUP reloads nothing: it is logged, not fatal. Returns the remover. */
export function ignoreHangup(signals: SignalSource, logger: Logger): () => void {
  const onHup = (): void => logger.info({}, 'toolwire: SIGHUP ignored: no --manifest to reload (MCP servers re-list their tools themselves)');
  signals.on('SIGHUP', onHup);
  return () => signals.off('SIGHUP', onHup);
}
