/**
 * `ToolHost`: the library face of a tool host (DESIGN §7). Registers tools, keeps a connection to
 * the server (supervisor), advertises on every `welcome`, and hands calls to the connection's
 * `CallSession`.
 */
import { HostMetrics } from './host-metrics.js';
import { EventEmitter } from 'node:events';
import { type AdvertisedMessage, CloseCode, NAME_PATTERN, PROTOCOL_VERSION, type HelloMessage, type WelcomeMessage, closeCodeName } from '@toolwire/protocol';
import { CallAborted } from '../calls/abort.js';
import { Admission } from '../calls/admission.js';
import { CallSession } from '../calls/call-session.js';
import type { HostSocket } from '../connection/host-socket.js';
import type { CloseInfo, SessionMessage } from '../connection/host-socket-options.js';
import { ConnectionSupervisor } from '../connection/supervisor.js';
import type { CommandSpec, CommandToolSpec, InProcessToolSpec, ToolHandler } from '../types.js';
import type { McpServerConfig } from '../sources/mcp/config.js';
import { McpSource } from '../sources/mcp/mcp-source.js';
import { SOFTWARE } from '../version.js';
import { describeClose, REFUSAL_CODES, remoteOf } from './close-report.js';
import { type Deferred, deferred } from './deferred.js';
import { HostReplacedError, type ServerRefusedError } from './errors.js';
import type { ToolHostEvents } from './events.js';
import { type ResolvedHostOptions, type ToolHostOptions, resolveHostOptions } from './options.js';
import { ToolSet, type ToolSetChange, plainSpec } from './tool-set.js';

/**
 * A tool host: tools registered here are advertised to the server and called by it.
 *
 * @example
 * const host = new ToolHost({ server: 'ws://127.0.0.1:7700', token });
 * host.tool('echo', { inputSchema: { type: 'object' } }, (input) => JSON.stringify(input));
 * await host.start();
 */
export class ToolHost extends EventEmitter<ToolHostEvents> {
  readonly #options: ResolvedHostOptions;
  readonly #tools: ToolSet;
  readonly #draining = new Set<Promise<void>>();
  /** What runs and waits, across connections: calls of a lost connection keep their places until their work is gone. */
  readonly #admission: Admission;
  #supervisor: ConnectionSupervisor | undefined;
  #current: { socket: HostSocket; session: CallSession } | undefined;
  /** This host's metrics (`metrics: true`), and the tools the server accepted last. */
  readonly #metrics: HostMetrics | undefined;
  #accepted = 0;
  #started: Deferred<AdvertisedMessage> | undefined;
  #closing: Promise<void> | undefined;

  /** @throws TypeError/RangeError on bad options (see {@link ToolHostOptions}) */
  constructor(options: ToolHostOptions) {
    super();
    this.#options = resolveHostOptions(options);
    this.#tools = new ToolSet(this.#options.logger, () => this.#advertise());
    this.#admission = new Admission(this.#options.limits);
    this.#metrics = this.#options.metrics
      ? new HostMetrics({ inFlight: () => this.#current?.session.size ?? 0, connected: () => this.#current !== undefined, toolsAdvertised: () => this.#accepted })
      : undefined;
  }

  /** This host's metrics as OpenMetrics text and its content type; `undefined` unless `metrics: true`. */
  async scrapeMetrics(): Promise<{ contentType: string; text: string } | undefined> {
    return this.#metrics?.scrape();
  }

  /**
   * Register an in-process tool. When already connected, the tool set is advertised again.
   * @throws TypeError on a bad name (`[A-Za-z0-9_-]{1,64}`), a duplicate, or a spec without an object `inputSchema`
   */
  tool(name: string, spec: InProcessToolSpec, handler: ToolHandler): this {
    this.#tools.addHandler(name, spec, handler);
    this.#advertise();
    return this;
  }

  /**
   * Register a subprocess tool (what a manifest entry becomes; a `CommandToolSpec` from
   * `loadManifest` fits, its own `name` is ignored in favour of `name`).
   * @throws TypeError/RangeError on a bad name, a duplicate, or a bad spec
   */
  command(name: string, spec: CommandSpec): this {
    this.#tools.addCommand(name, spec);
    this.#advertise();
    return this;
  }

  /**
   * Serve the tools of an MCP server (DESIGN §7 "MCP servers"): it is started now (a stdio server
   * as a child in its own process group, reaped with the host), initialized within
   * `config.startupTimeoutMs`, and its tools (every page, up to `config.maxTools`, filtered by
   * `include`/`exclude`) are advertised as `<name>_<tool>` (or `<prefix><tool>`). A name another
   * tool of this host already has is refused with a logged warning. If the server dies its tools
   * leave, its calls in flight end 69 with the reason, and it is restarted with backoff. Closed
   * with the host.
   * @throws TypeError on a bad name, or a name given before
   */
  mcpServer(name: string, config: McpServerConfig): this {
    if (typeof name !== 'string' || !NAME_PATTERN.test(name)) throw new TypeError(`MCP server name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(name)}`);
    if (this.#tools.sources().some((s) => s.label === `mcp:${name}`)) throw new TypeError(`MCP server ${JSON.stringify(name)} is already added`);
    if (this.#closing) throw new Error('ToolHost is closed');
    const o = this.#options;
    const source = new McpSource({ name, config, root: o.root, cancelGraceMs: o.cancelGraceMs, env: o.env, logger: o.logger });
    this.#tools.addSource(source);
    void source.start();
    return this;
  }

  /**
   * Unregister a tool (either kind). When it was registered and the host is connected, the tool set
   * is advertised again (the server drops the tool from its list). A call already running on it
   * finishes as it started.
   * @returns whether `name` was registered
   */
  remove(name: string): boolean {
    const removed = this.#tools.remove(name);
    if (removed) this.#advertise();
    return removed;
  }

  /**
   * Make the subprocess tools exactly `tools` (what `loadManifest` returns), keeping the in-process
   * tools: what `toolwire host` does on SIGHUP. All or nothing — every spec is checked first, and a
   * throw changes nothing. When anything changed and the host is connected, the new set goes out in
   * one `advertise` (its `advertised` answer is emitted as after a connect). Calls already running
   * on a removed or changed tool finish with the definition they started with; new calls get the new one.
   * @returns the names added, removed and changed
   * @throws TypeError/RangeError on a bad spec, a name given twice, or the name of an in-process tool
   */
  replaceCommands(tools: readonly CommandToolSpec[]): ToolSetChange {
    const change = this.#tools.replaceCommands(tools.map((t) => ({ name: t.name, spec: t })));
    if (change.added.length + change.removed.length + change.changed.length > 0) this.#advertise();
    return change;
  }

  /**
   * Connect and keep connected. Resolves with the first `advertised`. With `reconnect: false` it
   * rejects when the only attempt fails (HTTP 401, unreachable, closed before `advertised`);
   * otherwise it keeps retrying and rejects only if {@link close} comes first or the server refuses
   * the host for good (a {@link TokenRefusedError} on HTTP 401, or another {@link ServerRefusedError}). Calling it again
   * returns the same promise.
   */
  start(): Promise<AdvertisedMessage> {
    if (this.#closing) return Promise.reject(new Error('ToolHost is closed'));
    if (this.#started) return this.#started.promise;
    const started = deferred<AdvertisedMessage>();
    this.#started = started;
    const o = this.#options;
    const hello: HelloMessage = { type: 'hello', protocol: PROTOCOL_VERSION, software: SOFTWARE };
    if (o.name !== undefined) hello.name = o.name;
    this.#supervisor = new ConnectionSupervisor(
      {
        socket: {
          url: o.server,
          token: o.token,
          ca: o.ca,
          hello,
          maxPayload: o.maxPayload,
          welcomeTimeoutMs: o.welcomeTimeoutMs,
          closeWaitMs: 1000,
          logger: o.logger,
        },
        reconnect: o.reconnect,
        logger: o.logger,
      },
      {
        onWelcome: (socket, welcome) => this.#onWelcome(socket, welcome),
        onMessage: (socket, message, bytes) => this.#onMessage(socket, message, bytes),
        onDown: (socket, info, willRetry, refusal) => this.#onDown(socket, info, willRetry, refusal),
      },
    );
    this.#supervisor.start();
    return started.promise;
  }

  /**
   * Stop for good: no reconnect, every running call aborted (subprocesses killed, within
   * `cancelGraceMs + drainMs`), the connection closed with 1000. Resolves when nothing of this host
   * is left running — no process, no timer. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#retire(new CallAborted('unavailable', 'tool host closing'));
    await this.#supervisor?.stop();
    await Promise.all(this.#draining);
    await Promise.all(this.#tools.sources().map((s) => s.close()));
    this.#started?.reject(new Error('ToolHost closed before the server answered advertise'));
  }

  #advertise(): void {
    const current = this.#current;
    if (current === undefined) return;
    const specs = this.#tools.specs();
    // Tool metadata is protocol 2: a protocol 1 server would refuse the whole advertise for it.
    current.socket.send({ type: 'advertise', tools: current.socket.protocol >= 2 ? specs : specs.map(plainSpec) });
  }

  #onWelcome(socket: HostSocket, welcome: WelcomeMessage): void {
    const o = this.#options;
    if (welcome.protocol !== socket.protocol) {
      o.logger.warn({ server: welcome.protocol, negotiated: socket.protocol }, 'toolwire: the welcome names another protocol version than the upgrade');
    }
    const session = new CallSession(
      (frame, sent) => socket.sendFrame(frame, sent),
      welcome.limits.maxPayload,
      (name) => this.#tools.get(name),
      {
        root: o.root,
        cancelGraceMs: o.cancelGraceMs,
        drainMs: o.drainMs,
        maxCaptureBytes: o.maxCaptureBytes,
        spawnHelper: o.spawnHelper,
        env: o.env,
        admission: this.#admission,
        logger: o.logger,
        metrics: this.#metrics,
        withdrawn: (name) => this.#tools.withdrawn(name),
      },
      o.liveOutput ? welcome.output : undefined, // live output: every call streams when the server offers a window
      socket.protocol,
    );
    this.#current = { socket, session };
    o.logger.info({ host: welcome.host, remote: remoteOf(o.server), protocol: welcome.protocol, heartbeatMs: welcome.heartbeatMs }, 'toolwire: connected');
    this.emit('connected', welcome);
    this.#advertise();
  }

  #onMessage(socket: HostSocket, message: SessionMessage, bytes: number): void {
    const current = this.#current;
    if (!current || current.socket !== socket) return;
    switch (message.type) {
      case 'advertised':
        for (const r of message.rejected) this.#options.logger.warn({ tool: r.name, reason: r.reason }, 'toolwire: tool rejected by the server');
        this.#accepted = message.accepted.length;
        this.#metrics?.rejected(message.rejected.length + (message.moreRejected ?? 0));
        this.emit('advertised', message);
        this.#started?.resolve(message);
        break;
      case 'call':
        current.session.dispatch(message, bytes);
        break;
      case 'cancel':
        current.session.cancel(message);
        break;
      case 'credit':
        current.session.credit(message);
        break;
    }
  }

  #onDown(socket: HostSocket, info: CloseInfo, willRetry: boolean, refusal?: ServerRefusedError): void {
    const log = this.#options.logger;
    if (this.#current?.socket === socket) this.#retire(new CallAborted('unavailable', 'connection to the server lost'));
    const replaced = info.opened && info.code === CloseCode.REPLACED;
    if (info.opened) {
      const fields = { remote: remoteOf(this.#options.server), code: info.code, name: closeCodeName(info.code), reason: info.reason };
      // The server refused something this host sent (wrong-shape hello or advertise, a limit): the
      // close reason is the only place the host learns why.
      if (REFUSAL_CODES.has(info.code) && !this.#closing) log.error(fields, `toolwire: the server closed the connection: ${describeClose(info)}`);
      else log.info(fields, 'toolwire: disconnected');
      this.emit('disconnected', { code: info.code, reason: info.reason });
    }
    // Replaced or refused for good: the supervisor dials no more (see ConnectionSupervisor).
    const stop = replaced ? new HostReplacedError() : refusal;
    const error = stop ?? info.error ?? (info.welcomed ? undefined : new Error(`connection closed before welcome (${describeClose(info)})`));
    if (error && !this.#closing) this.#reportError(error, willRetry, stop ? 'error' : 'warn');
    if (stop && !this.#closing) this.emit('stopped', stop);
    if (!willRetry && !this.#closing) {
      this.#started?.reject(error ?? new Error(`connection closed (code ${info.code}) and reconnect is off`));
    }
  }

  /** Abort the current session's calls and track them until their work is gone. */
  #retire(reason: CallAborted): void {
    const current = this.#current;
    if (!current) return;
    this.#current = undefined;
    current.session.abortAll(reason);
    const idle = current.session.idle().finally(() => this.#draining.delete(idle));
    this.#draining.add(idle);
  }

  #reportError(error: Error, willRetry: boolean, level: 'warn' | 'error'): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.#options.logger[level]({ code: (error as NodeJS.ErrnoException).code, willRetry }, `toolwire: ${error.message}`);
  }
}
