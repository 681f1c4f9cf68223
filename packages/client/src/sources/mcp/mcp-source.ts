/**
 * An MCP server as a {@link ToolSource} (DESIGN §7 "MCP servers"). The host starts the server (a
 * stdio child in its own process group, reaped with the host; or a Streamable HTTP endpoint),
 * initializes it with the MCP client SDK within `startupTimeoutMs`, lists its tools (every page,
 * up to `maxTools`) and serves them; the server stays up across calls. `notifications/tools/
 * list_changed` lists them again. When the server dies or its connection closes, its tools leave
 * at once (the host re-advertises), the calls in flight on it settle 69 with the reason ("MCP
 * server fs exited with code 1"), and it is started again with full-jitter backoff; its tools
 * return when it is back. A call's input goes to `tools/call` unchanged (`tool-calls.ts`: on the
 * transport, beside the SDK client, which does the rest of the exchange); a stop or deadline (the call
 * layer's) sends `notifications/cancelled` and the call ends 130/124 at once, whether or not the
 * server answers. Progress notifications become the call's progress.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { failureCapture } from '@toolwire/protocol';
import { Backoff } from '../../connection/backoff.js';
import { DEFAULT_ENV_POLICY, type EnvPolicy, mcpServerEnv } from '../../subprocess/tool-env.js';
import type { Logger } from '../../types.js';
import { SOFTWARE_VERSION } from '../../version.js';
import type { RunStart, SourceCall, SourceTool, ToolSource } from '../source.js';
import { McpDefaults, type McpServerConfig } from './config.js';
import { McpCall, type McpConnection } from './call.js';
import { connectionFetch, sendLoss } from './http-watch.js';
import { StdioServerTransport } from './stdio-transport.js';
import { ToolCalls } from './tool-calls.js';
import { checkedTool, selectTools } from './tool-map.js';
import { type McpClientSdk, loadMcpClientSdk } from './sdk.js';

/** A tool of an MCP server: its advertised face and its name on the server. */
export interface McpTool extends SourceTool {
  /** The tool's name on the MCP server. */
  readonly remote: string;
  readonly hasOutputSchema: boolean;
}

/** What an {@link McpSource} needs from its host. Times in ms. */
export interface McpSourceOptions {
  /** The server's name (`[A-Za-z0-9_-]{1,64}`): tools are named `<name>_<tool>` unless `config.prefix` says otherwise. */
  name: string;
  config: McpServerConfig;
  /** Working directory of a stdio server without a `cwd`. */
  root: string;
  /** SIGTERM → SIGKILL grace when the server is stopped. */
  cancelGraceMs: number;
  /** What is removed from a stdio server's environment (the host's credentials); default: TOOLWIRE_TOKEN, TOOLWIRE_TOKEN_FILE. */
  env?: EnvPolicy;
  logger: Logger;
  /** Restart backoff; default 250 → 30000 ms, full jitter. */
  restart?: { baseMs: number; maxMs: number };
}

interface Live extends McpConnection {
  sdk: McpClientSdk;
  client: Client;
  transport: Transport;
  /** Calls in flight on this connection (once it is up): each settles with the reason when it dies. */
  calls: ToolCalls | undefined;
  isDown: boolean;
  /** Why a Streamable HTTP server's connection was taken down ({@link McpSource.#lost}), if it was. */
  lostReason?: string;
  /** It did not start and toolwire stopped it (its SIGTERM is then toolwire's, not a death to report). */
  startFailed?: boolean;
  /** A listing after `tools/list_changed` runs; `relist`: another change came meanwhile, list once more after it. */
  listing?: boolean;
  relist?: boolean;
}

/** One MCP server's tools. {@link start} once; {@link close} ends it. */
export class McpSource implements ToolSource {
  readonly label: string;
  readonly #o: McpSourceOptions;
  readonly #backoff: Backoff;
  #tools: McpTool[] = [];
  /** While its tools are gone because the server went down: their names and why ({@link withdrawn}). */
  #gone: { names: ReadonlySet<string>; reason: string } | undefined;
  #live: Live | undefined;
  #listener: (() => void) | undefined;
  #restart: NodeJS.Timeout | undefined;
  #closed = false;
  #first: Promise<void> | undefined;

  constructor(options: McpSourceOptions) {
    this.#o = options;
    this.label = `mcp:${options.name}`;
    this.#backoff = new Backoff(options.restart ?? { baseMs: McpDefaults.restartBaseMs, maxMs: McpDefaults.restartMaxMs });
  }

  /** Start the server. Resolves after the first attempt, whether it came up or not (a failure is logged and retried). */
  start(): Promise<void> {
    this.#first ??= this.#connect();
    return this.#first;
  }

  tools(): readonly SourceTool[] {
    return this.#tools;
  }

  withdrawn(name: string): string | undefined {
    return this.#gone?.names.has(name) === true ? this.#gone.reason : undefined;
  }

  onChange(listener: () => void): void {
    this.#listener = listener;
  }

  run(tool: SourceTool, input: unknown, { ctx, abort, settings }: SourceCall): RunStart {
    const live = this.#live;
    const calls = live?.calls;
    if (live === undefined || live.isDown || calls === undefined) return { capture: failureCapture('unavailable', `MCP server ${this.#o.name} is not running`) };
    const t = tool as McpTool;
    const call = new McpCall(live, t.hasOutputSchema, settings.capBytes, ctx);
    if (abort.aborted) {
      call.aborted(abort.reason!);
      return { work: call.work };
    }
    const id = calls.call(t.remote, input, call);
    // The call layer's abort (a stop, or its deadline: no timer of our own) cancels the request and settles the call at once.
    abort.onAbort(() => {
      calls.cancel(id, abort.reason!.message);
      call.aborted(abort.reason!);
    });
    return { work: call.work };
  }

  /** Stop the server for good; calls in flight settle 69. Resolves when its process is gone. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restart);
    const live = this.#live;
    this.#live = undefined;
    if (live !== undefined) {
      this.#down(live, `MCP server ${this.#o.name} stopped (tool host closing)`);
      await live.client.close().catch(() => {});
      await live.transport.close().catch(() => {});
    }
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const o = this.#o;
    let sdk: McpClientSdk;
    try {
      sdk = await loadMcpClientSdk();
    } catch (error) {
      if (this.#closed) return;
      const delay = this.#backoff.next();
      const why = error instanceof Error ? error.message : String(error);
      o.logger.error(
        { server: o.name, err: why, restartInMs: delay },
        `toolwire: MCP server ${o.name} did not start: the MCP SDK did not load: ${why}; retrying in ${delay} ms`,
      );
      this.#restart = setTimeout(() => void this.#connect(), delay);
      return;
    }
    if (this.#closed) return;
    const c = o.config;
    let live: Live | undefined;
    const transport: Transport =
      c.url !== undefined
        ? new sdk.StreamableHTTPClientTransport(new URL(c.url), {
            requestInit: { headers: c.headers ?? {} },
            fetch: connectionFetch({
              name: o.name,
              maxMessageBytes: c.maxMessageBytes ?? McpDefaults.maxMessageBytes,
              lose: (reason) => {
                if (live !== undefined && !live.isDown) this.#lost(live, reason);
              },
              unanswered: (id, reason) => live?.calls?.unanswered(id, reason),
            }),
          })
        : new StdioServerTransport({
            command: c.command!,
            args: c.args ?? [],
            cwd: c.cwd ?? o.root,
            env: mcpServerEnv(c.env, o.env ?? DEFAULT_ENV_POLICY),
            maxMessageBytes: c.maxMessageBytes ?? McpDefaults.maxMessageBytes,
            killGraceMs: o.cancelGraceMs,
          });
    const client = new sdk.Client({ name: 'toolwire-host', version: SOFTWARE_VERSION }, { capabilities: {} });
    const up: Live = {
      sdk,
      client,
      transport,
      calls: undefined,
      isDown: false,
      server: o.name,
      down: () => (up.isDown || this.#cut(up) ? this.#downReason(up) : undefined),
    };
    live = up;
    client.onclose = () => this.#died(up);
    client.onerror = (error) => o.logger.warn({ server: o.name, err: error.message }, `toolwire: MCP server ${o.name}: ${error.message}`);
    const timeout = c.startupTimeoutMs ?? McpDefaults.startupTimeoutMs;
    this.#live = live;
    try {
      await client.connect(transport, { timeout });
      // after connect: it wraps the SDK client's onmessage
      up.calls = new ToolCalls(
        transport,
        sdk.CallToolResultSchema,
        c.url === undefined
          ? undefined
          : (error) => {
              const reason = sendLoss(o.name, error, sdk.StreamableHTTPError);
              if (reason !== undefined && !up.isDown) this.#lost(up, reason);
            },
      );
      client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => this.#listChanged(up, timeout));
      await this.#list(up, timeout, true);
    } catch (error) {
      if (up.isDown || this.#closed) return;
      // The SDK's timeout says only "Request timed out": name the request and the setting that bounds it.
      const why =
        error instanceof sdk.McpError && error.code === (sdk.ErrorCode.RequestTimeout as number)
          ? `no answer to ${up.calls === undefined ? 'initialize' : 'tools/list'} within ${timeout} ms (startup_timeout_ms)`
          : error instanceof Error
            ? error.message
            : String(error);
      o.logger.error({ server: o.name, err: why }, `toolwire: MCP server ${o.name} did not start: ${why}`);
      up.startFailed = true;
      await this.#stop(up);
      return;
    }
    this.#backoff.reset();
    o.logger.info({ server: o.name, tools: this.#tools.length }, `toolwire: MCP server ${o.name} is up`);
  }

  /**
   * `tools/list_changed`: list again, one listing at a time; changes announced during a listing make
   * one more after it (a server announcing each of its tools is listed twice, not once per tool).
   */
  #listChanged(live: Live, timeout: number): void {
    if (live.listing === true) {
      live.relist = true;
      return;
    }
    live.listing = true;
    (async () => {
      try {
        do {
          live.relist = false;
          await this.#list(live, timeout); // logs a failed listing, never rejects after the first
        } while (live.relist && !live.isDown);
      } finally {
        live.listing = false;
      }
    })().catch((error: unknown) =>
      this.#o.logger.warn({ server: this.#o.name, err: String(error) }, `toolwire: MCP server ${this.#o.name}: listing its tools failed`),
    );
  }

  /** List every page of tools (at most `maxTools`) and serve them. */
  async #list(live: Live, timeout: number, first = false): Promise<void> {
    const o = this.#o;
    const max = o.config.maxTools ?? McpDefaults.maxTools;
    const listed: Tool[] = [];
    let cursor: string | undefined;
    let examined = 0;
    let more = 0;
    try {
      do {
        const page = await live.client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, live.sdk.PaginatedResultSchema, {
          timeout,
        });
        if (!Array.isArray(page.tools)) throw new Error('tools/list answered without a tools array');
        // Each entry is checked on its own: one the MCP schema refuses is logged and not served, the
        // others are (it counts towards max_tools, which so also bounds these log lines).
        for (const entry of page.tools as unknown[]) {
          if (examined++ >= max) {
            more++;
            continue;
          }
          const tool = checkedTool(entry, live.sdk.ToolSchema);
          if ('inputSchema' in tool) listed.push(tool);
          else o.logger.warn({ server: o.name, tool: tool.name }, `toolwire: MCP server ${o.name}: tool ${tool.name} not served: ${tool.reason}`);
        }
        if (examined >= max && page.nextCursor !== undefined) more++;
        // A page without tools that names a next page (or the same cursor again) would list forever: stop there.
        const stuck = page.nextCursor !== undefined && (page.tools.length === 0 || page.nextCursor === cursor);
        if (stuck) {
          o.logger.warn(
            { server: o.name },
            `toolwire: MCP server ${o.name}: tools/list gave a page without tools (or the same cursor again) and a next cursor; the listing stops there`,
          );
        }
        cursor = examined < max && !stuck ? page.nextCursor : undefined;
      } while (cursor !== undefined && !live.isDown);
    } catch (error) {
      if (first) throw error;
      o.logger.warn({ server: o.name, err: String(error) }, `toolwire: MCP server ${o.name}: tools/list failed, its tools stay as they were`);
      return;
    }
    if (live.isDown || this.#live !== live) return;
    if (more > 0)
      o.logger.warn({ server: o.name, maxTools: max }, `toolwire: MCP server ${o.name} lists more than ${max} tools; the rest are not served (max_tools)`);
    this.#tools = selectTools(listed, this.#o, this);
    this.#gone = undefined;
    this.#listener?.();
  }

  /** A Streamable HTTP server's connection is lost: as a death ({@link #died}, with `reason`); the old client is closed. */
  #lost(live: Live, reason: string): void {
    live.lostReason = reason;
    this.#died(live);
    live.client.close().catch(() => {});
  }

  /** The connection closed (the server exited, or its HTTP session ended). */
  #died(live: Live): void {
    if (live.isDown) return;
    const reason = this.#downReason(live);
    this.#down(live, reason);
    if (this.#closed || this.#live !== live) return;
    this.#live = undefined;
    const delay = this.#backoff.next();
    this.#o.logger.warn({ server: this.#o.name, restartInMs: delay }, `toolwire: ${reason}; restarting in ${delay} ms`);
    this.#restart = setTimeout(() => void this.#connect(), delay);
  }

  /** Its tools leave, its calls settle 69 with `reason`. */
  #down(live: Live, reason: string): void {
    live.isDown = true;
    live.calls?.endAll(reason);
    if (this.#tools.length > 0) {
      this.#gone = { names: new Set(this.#tools.map((t) => t.name)), reason };
      this.#tools = [];
      this.#listener?.();
    }
  }

  /** Close a connection that failed to start, then retry (its onclose schedules the restart). */
  async #stop(live: Live): Promise<void> {
    await live.client.close().catch(() => {});
    await live.transport.close().catch(() => {});
    this.#died(live);
  }

  /** Whether the host is stopping a stdio server that closed its stdin or stdout, or did not read its stdin (its calls then end 69, not 70). */
  #cut(live: Live): boolean {
    return live.transport instanceof StdioServerTransport && live.transport.cut !== undefined;
  }

  #downReason(live: Live): string {
    const name = this.#o.name;
    const stdio = live.transport instanceof StdioServerTransport ? live.transport : undefined;
    const { exit, cut } = stdio ?? {};
    let how: string;
    // After a failed start the SIGTERM (or SIGKILL) is toolwire's own: not reported as the server's death.
    if (live.startFailed === true) how = 'was stopped by toolwire (it did not start)';
    else if (stdio === undefined) return live.lostReason ?? `MCP server ${name} closed its connection`;
    else if (exit === undefined && cut === undefined) return `MCP server ${name} closed its connection`;
    else
      how =
        cut === 'unread'
          ? `did not read its stdin (over ${2 * (this.#o.config.maxMessageBytes ?? McpDefaults.maxMessageBytes)} bytes waited) and was stopped`
          : cut !== undefined
            ? `closed its ${cut} and was stopped`
            : exit!.error !== undefined
              ? `could not start: ${exit!.error.message}`
              : exit!.signal !== null
                ? `was killed by ${exit!.signal}`
                : `exited with code ${exit!.code}`;
    const tail = stdio !== undefined ? (exit?.stderr ?? stdio.stderr).trim().split('\n').pop() : undefined;
    return `MCP server ${name} ${how}${tail ? ` (stderr: ${tail.slice(0, 200)})` : ''}`;
  }
}
