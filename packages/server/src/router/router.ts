/**
 * The router: the server half of the seam (seed 000, DESIGN §2). `tools()` lists every tool a
 * connected host advertised; `route()` sends a call to the host that advertised its name and always
 * settles with a capture. Host sessions register themselves through `bind` / `advertise` / `unbind`.
 */
import { EventEmitter } from 'node:events';
import { type AdvertisedMessage, failureCapture } from '@toolwire/protocol';
import type { Logger } from '../options.js';
import { checkAdvertise } from '../registry/advertise-check.js';
import { type PreparedAdvertise, prepareAdvertise } from '../registry/prepare.js';
import { type RegisteredTool, type RegistryOptions, rejectAllReply, ToolRegistry } from '../registry/registry.js';
import { acceptRemote, prepareRemote } from '../registry/remote-specs.js';
import type { SchemaCompiler } from '../registry/schema-compiler.js';
import type { InjectedTool, RoutedCall, RoutedCapture, ToolInjection } from '../seam.js';
import { isStopped } from '../session/stop-watch.js';
import { type IdentityClaim, type NameClaim, refuseTakenNames } from './claims.js';
import type { HostLink } from './host-link.js';
import { type HostInfo, hostInfos, type LocalHost, localHostsOf } from './listing.js';

/** What the router reads: the registry's naming and tool limits, the schema compiler and the logger. */
export interface RouterOptions extends RegistryOptions {
  /** Compiles advertised schemas within each host's budget (one per server). */
  compiler: SchemaCompiler;
  logger: Logger;
}

/**
 * `ToolInjection` over connected tool hosts.
 *
 * Events: `'toolsChanged'` `()` — emitted exactly once per change of `tools()`: a host advertised or
 * re-advertised a different set (exposed name, description or schema), or a host with tools left
 * (closed, lost, replaced). A listener that throws is logged, never propagated.
 * `'localChanged'` `(host: string)` — a host connected to this node bound, advertised, left or was
 * evicted (what a cluster announces to the other nodes).
 */
export class Router extends EventEmitter implements ToolInjection {
  readonly #registry: ToolRegistry;
  readonly #links = new Map<string, HostLink>();
  /**
   * Exposed tool names of hosts that left, → host name, until that host advertises again. A call to
   * one of them answers 69 "not connected" (retry later) rather than 127 "no such tool". Bounded:
   * at most `maxToolsPerHost` names per host identity.
   */
  readonly #departed = new Map<string, string>();
  /** Why a departed host is unreachable when it is not that it disconnected (e.g. its cluster node was lost), by host. */
  readonly #departedWhy = new Map<string, string>();
  readonly #logger: Logger;
  readonly #compiler: SchemaCompiler;
  readonly #options: RegistryOptions;
  /** Advertised entries rejected since the router was made (listed and counted in `moreRejected`; for `/metrics`). */
  advertiseRejected = 0;
  /** Set by a cluster: the identity lease a host session takes before it binds. */
  claim: IdentityClaim | undefined;
  /** Set by a cluster with naming `bare`: the name leases a host on this node takes before its tools are listed. */
  claimNames: NameClaim | undefined;

  constructor(options: RouterOptions) {
    super();
    const { logger, compiler, ...registry } = options;
    this.#logger = logger;
    this.#compiler = compiler;
    this.#options = registry;
    this.#registry = new ToolRegistry(registry);
  }

  /**
   * Every tool currently advertised by a connected host: `{name, inputSchema, description?}` with
   * `name` qualified `<host>__<tool>` (naming `qualified`, default) or bare (naming `bare`). The same
   * frozen array is returned until the next `toolsChanged`.
   */
  tools(): InjectedTool[] {
    return this.#registry.list();
  }

  /**
   * Route `call` to the host that advertised `call.name`. Resolves `undefined` when no host advertises
   * that name ("not mine", the executor falls through → 127); a name whose host left and has not
   * advertised again answers 69 (retry later). Otherwise always a capture:
   * the host's result, or synthetic — 130 when `call.signal` is already aborted (nothing sent), 69
   * host not connected, 75 overloaded, 76 protocol violation, 124 deadline
   * (`call.deadlineMs ?? ToolwireServerOptions.deadlineMs`), 130 stop. Never rejects.
   */
  route(call: RoutedCall): Promise<RoutedCapture | undefined> {
    // Not an `async` function: the common path returns the session's promise as it is (no async
    // frame, no extra promise per call). `HostLink.call` never rejects; a throw anywhere here
    // becomes a capture, where the call is answered (CONTRIBUTING).
    try {
      const tool = this.#registry.lookup(call.name);
      if (tool === undefined) {
        const gone = this.#departed.get(call.name);
        if (gone === undefined) return Promise.resolve(undefined);
        const why = this.#departedWhy.get(gone);
        return Promise.resolve(
          failureCapture(
            'unavailable',
            why === undefined
              ? `host ${gone} is not connected; its tools return when it reconnects`
              : `host ${gone} is unreachable: ${why}; its tools return when it is reachable again`,
          ),
        );
      }
      if (isStopped(call)) return Promise.resolve(failureCapture('cancelled', 'cancelled by stop'));
      const link = this.#links.get(tool.host);
      if (link === undefined || !link.isOpen) {
        return Promise.resolve(failureCapture('unavailable', `host ${tool.host} is not connected`));
      }
      call.host = tool.host;
      if (link.node !== undefined) call.node = link.node;
      return link.call(tool.spec.name, call);
    } catch (error) {
      return Promise.resolve(this.#internalError(error));
    }
  }

  /** The 70 capture of a throw while routing; nothing here may throw in turn (a hostile error or call). */
  #internalError(error: unknown): RoutedCapture {
    let why = 'unprintable error';
    try {
      why = error instanceof Error ? error.message : String(error);
    } catch {
      // keep the placeholder
    }
    try {
      this.#logger.error({ err: error }, 'router: unexpected error while routing');
    } catch {
      // a logger that throws must not turn the answer into a throw
    }
    return failureCapture('host_error', `internal error while routing: ${why}`);
  }

  /** Connected (hello done) hosts with their exposed tool names, pending call count and connect time. */
  hosts(): HostInfo[] {
    return hostInfos(this.#links, this.#registry);
  }

  /** The accepted tools of `host` as it advertised them (exposed name and spec), in advertise order. */
  toolsOf(host: string): readonly RegisteredTool[] {
    return this.#registry.toolsOf(host);
  }

  /** The host answering exposed tool name `name`, or `undefined` when none advertises it. */
  hostOf(name: string): string | undefined {
    return this.#registry.lookup(name)?.host;
  }

  /** Output bytes received so far of every call pending on a connected host that streamed, by routed call (the status page). */
  outputBytes(): Map<RoutedCall, number> {
    const bytes = new Map<RoutedCall, number>();
    for (const link of this.#links.values()) link.outputBytes?.(bytes);
    return bytes;
  }

  /**
   * Stop `call` (a call this router was given and has not answered) on the host it was sent to, as
   * its signal aborting would: the host is sent `cancel`, the call settles 130. False when the call
   * is not pending on a connected host (not routed yet, answered, or its host left).
   */
  stopCall(call: RoutedCall): boolean {
    const host = this.#registry.lookup(call.name)?.host;
    const link = host === undefined ? undefined : this.#links.get(host);
    return link?.stop?.(call) ?? false;
  }

  /** The hosts connected to this node (not those of other cluster nodes) with their accepted tool specs. */
  localHosts(): LocalHost[] {
    return localHostsOf(this.#links, this.#registry);
  }

  /** The exposed tool names of `host` (none when it is not connected). */
  namesOf(host: string): string[] {
    return this.#registry.namesOf(host);
  }

  /** The link bound for `host`, if any. */
  linkOf(host: string): HostLink | undefined {
    return this.#links.get(host);
  }

  /**
   * Another cluster node took `host`'s identity: close this node's session of it (4000, its calls
   * → 69) and remove its tools. Returns whether there was one. For clusters.
   */
  evict(host: string): boolean {
    const link = this.#links.get(host);
    if (link === undefined || link.node !== undefined) return false;
    this.#links.delete(host);
    link.replace();
    this.#removeTools(host);
    this.#localChanged(host);
    return true;
  }

  /**
   * Make `link` the session of its host identity (on its `hello`). A previous session of the same
   * identity is replaced first: closed 4000, its calls → 69, its tools removed (one `toolsChanged`
   * if it had any). The new session starts with no tools until it advertises. For host sessions.
   */
  bind(link: HostLink): void {
    const previous = this.#links.get(link.host);
    if (previous === link) return;
    this.#links.set(link.host, link);
    if (previous !== undefined) {
      this.#logger.info({ host: link.host, remote: link.remote, previousRemote: previous.remote }, 'host replaced by a newer connection');
      previous.replace();
    }
    this.#removeTools(link.host);
    if (link.node === undefined || (previous !== undefined && previous.node === undefined)) this.#localChanged(link.host);
  }

  /**
   * Replace `link`'s tool set with `tools` — an `advertise` frame's items (unchecked), or the same
   * already prepared by the session (`prepareAdvertise`) — and resolve with the `advertised` reply.
   * The schemas compile within the host's budget, off the event loop (`checkAdvertise`); meanwhile
   * the old set stays; a host of another cluster node (`link.node` set) is examined, not compiled
   * (its node did; the executor compiles at first call: `remote-specs.ts`). Emits `toolsChanged`
   * once when the exposed set differs. A link that is not (or no longer) the bound session of its
   * identity changes nothing: every tool is rejected. Rejects only on a bug of ours.
   */
  async advertise(link: HostLink, tools: readonly unknown[] | PreparedAdvertise): Promise<AdvertisedMessage> {
    // A host of another node: its node compiled its schemas; here they are examined, not compiled (`remote-specs.ts`).
    const remote = link.node !== undefined;
    const prepared = Array.isArray(tools) ? (remote ? prepareRemote : prepareAdvertise)(tools, this.#options) : (tools as PreparedAdvertise);
    const isCurrent = (): boolean => this.#links.get(link.host) === link;
    const checks = isCurrent()
      ? await checkAdvertise(link.host, prepared, {
          compiler: remote ? acceptRemote : this.#compiler,
          registry: this.#registry,
          maxToolsPerHost: this.#options.maxToolsPerHost,
          isCurrent,
        })
      : undefined;
    if (checks === undefined) return this.#counted(rejectAllReply(prepared, 'session is no longer current', this.#options.maxToolsPerHost));
    if (this.claimNames !== undefined && link.node === undefined && this.#options.naming === 'bare') {
      const wanted = checks.flatMap((c) => (c.ok ? [c.tool.name] : []));
      const taken = wanted.length === 0 ? new Map<string, string>() : await this.claimNames(link.host, wanted);
      if (!isCurrent()) return this.#counted(rejectAllReply(prepared, 'session is no longer current', this.#options.maxToolsPerHost));
      refuseTakenNames(checks, taken);
    }
    this.#forgetDeparted(link.host);
    const { advertised, changed } = this.#registry.apply(link.host, checks, prepared.unexamined);
    if (changed) this.#emitChanged();
    if (link.node === undefined) this.#localChanged(link.host);
    return this.#counted(advertised);
  }

  #counted(reply: AdvertisedMessage): AdvertisedMessage {
    this.advertiseRejected += reply.rejected.length + (reply.moreRejected ?? 0);
    return reply;
  }

  /**
   * `link` has ended. Removes its host and tools only if `link` is still the bound session of its
   * identity (compared by object identity), so an old socket's late cleanup never removes a newer
   * session. Emits `toolsChanged` once when tools were removed. For host sessions; a cluster gives
   * `why` when the host is still connected somewhere but cannot be reached (its node was lost): a call
   * to its departed tools then answers 69 with that reason instead of "not connected".
   */
  unbind(link: HostLink, why?: string): void {
    if (this.#links.get(link.host) !== link) return;
    this.#links.delete(link.host);
    this.#removeTools(link.host);
    if (why !== undefined) this.#departedWhy.set(link.host, why);
    if (link.node === undefined) this.#localChanged(link.host);
  }

  /** Remove `host`'s tools (remembering their names as departed); one `toolsChanged` if any. */
  #removeTools(host: string): void {
    this.#departedWhy.delete(host);
    for (const name of this.#registry.namesOf(host)) this.#departed.set(name, host);
    if (this.#registry.remove(host)) this.#emitChanged();
  }

  #forgetDeparted(host: string): void {
    this.#departedWhy.delete(host);
    for (const [name, owner] of this.#departed) if (owner === host) this.#departed.delete(name);
  }

  #localChanged(host: string): void {
    if (this.listenerCount('localChanged') === 0) return;
    try {
      this.emit('localChanged', host);
    } catch (error) {
      this.#logger.error({ err: error }, 'router: a localChanged listener threw');
    }
  }

  #emitChanged(): void {
    try {
      this.emit('toolsChanged');
    } catch (error) {
      this.#logger.error({ err: error }, 'router: a toolsChanged listener threw');
    }
  }
}
