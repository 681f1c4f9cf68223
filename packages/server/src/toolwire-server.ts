/**
 * `ToolwireServer`: the whole server on one `http.Server` (an `https.Server` with `tls`: then
 * `wss://` and `https://…/mcp`) —
 * - WebSocket upgrades → the host endpoint (tool hosts, `Authorization: Bearer <host token>`);
 * - `/mcp` → the MCP door (Streamable HTTP, `Authorization: Bearer <caller token>`);
 * - `/status` → the live status page and its JSON (`status/status-http.ts`, caller token or session cookie);
 * - `GET /metrics` → the server's metrics in OpenMetrics text (caller token; `metrics: false` → 404);
 * - `GET /healthz` → 200 `{"ok": true, "hosts": <connected hosts>, "tools": <advertised tools>}`
 *   (counts only: the path is unauthenticated);
 * - OAuth discovery paths (`/.well-known/oauth-protected-resource`, …) → the answers of
 *   `endpoint/http-front.ts` (no OAuth: a caller bearer token);
 * - anything else → 404.
 * Before any of these, requests and upgrades whose `Host` the {@link HostPolicy} refuses (a loopback
 * server reached under another name: DNS rebinding) get HTTP 403.
 *
 * Every accepted connection is unauthenticated until a request on it passes authentication; until
 * then it counts toward the pre-auth caps and timeout (`preauth/guard.ts`). At the first `listen()`
 * the server closes the disk records of calls an earlier server process left in flight
 * (`executor/record-recovery.ts`) before the port opens, and once listening logs its open-files
 * limit and the connection caps in force.
 */
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pTimeout from 'p-timeout';
import { AuthLimiter } from './auth/limiter.js';
import type { ClusterNode } from './cluster/cluster.js';
import type { ClusterConfig } from './cluster/options.js';
import { type Principal, TokenTable } from './auth/tokens.js';
import { HostEndpoint } from './endpoint/host-endpoint.js';
import { HostPolicy } from './endpoint/http-front.js';
import { createHttpServer, type HttpFront } from './endpoint/http-server.js';
import { Executor } from './executor/executor.js';
import { McpDoor } from './mcp/door.js';
import { ServerMetrics } from './observe/metrics.js';
import { type ServerSeams, resolveServerConfig } from './config.js';
import type { CallerCredential, HostCredential, Logger, ToolwireServerOptions } from './options.js';
import { type Descriptors, logDescriptors } from './preauth/config.js';
import { PreAuthGuard } from './preauth/guard.js';
import { Router } from './router/router.js';
import { CallBoard } from './status/call-board.js';
import { type StatusCluster, type StatusSnapshot, statusSnapshot } from './status/snapshot.js';
import { StatusPage } from './status/status-http.js';

/** What {@link ToolwireServer.updateCredentials} closed. */
export interface CredentialsUpdate {
  /** Host sessions closed 1008 because their token was removed or rotated (their calls settled 69). */
  closedHosts: number;
  /** MCP sessions closed because their caller token was removed or rotated (their calls settled 130). */
  closedCallers: number;
}

/** Where a listening server can be reached. */
export interface ListenInfo {
  /** The bound address, e.g. `127.0.0.1` or `::1`. */
  host: string;
  port: number;
  /** URL tool hosts dial, e.g. `ws://127.0.0.1:7700`. */
  url: string;
  /** MCP door URL, e.g. `http://127.0.0.1:7700/mcp`. */
  mcpUrl: string;
}

/** Extra time, beyond `cancelGraceMs`, that `close()` waits for stopped calls to settle, ms. */
const STOP_MARGIN_MS = 500;
/** The toolwire server: host endpoint, router, executor and MCP door on one port. */
export class ToolwireServer {
  readonly tokens: TokenTable;
  readonly router: Router;
  readonly executor: Executor;
  readonly hostEndpoint: HostEndpoint;
  readonly mcp: McpDoor;
  /** Calls in flight and recently finished (the status page and `toolwire status`). */
  readonly #board: CallBoard;
  readonly #status: StatusPage;
  /** Failed-authentication limiter shared by the host endpoint and the MCP door. */
  readonly limiter: AuthLimiter;
  /** Accounting of the connections not yet authenticated (caps, timeout; `stats()` for counts). */
  readonly preAuth: PreAuthGuard;
  /** The metric families (`undefined` with `metrics: false`). */
  readonly #metrics: ServerMetrics | undefined;
  readonly #http: HttpServer;
  readonly #descriptors: Descriptors;
  #recovered = false;
  #listened = false;
  readonly #secure: boolean;
  readonly #logger: Logger;
  readonly #cancelGraceMs: number;
  readonly #hostPolicy: HostPolicy;
  #closing: Promise<void> | undefined;
  readonly #clusterConfig: ClusterConfig | undefined;
  readonly #clusterDeps: { deadlineMs: number; cancelGraceMs: number; capBytes: number; maxPayload: number };
  #cluster: ClusterNode | undefined;
  /** This node as the status snapshot shows it (cluster only). */
  readonly #statusCluster: StatusCluster | undefined;

  /**
   * @param options see {@link ToolwireServerOptions}; defaults in `ServerDefaults`
   * @param seams test seams only (internal; not part of the public API)
   * @throws TypeError/RangeError at once on a bad option or credential (see `TokenTable`).
   */
  constructor(options: ToolwireServerOptions = {}, seams: ServerSeams = {}) {
    const config = resolveServerConfig(options, seams);
    const { tls, toolControl, fallback } = config;
    const log = config.logger;
    this.#logger = log;
    this.#cancelGraceMs = config.cancelGraceMs;
    this.#hostPolicy = new HostPolicy(config.allowedHosts);
    this.#clusterConfig = config.cluster;
    this.#clusterDeps = {
      deadlineMs: config.endpoint.session.deadlineMs,
      cancelGraceMs: config.cancelGraceMs,
      capBytes: config.endpoint.session.output.capBytes,
      maxPayload: config.endpoint.session.maxPayload,
    };
    this.#descriptors = config.descriptors;
    this.tokens = new TokenTable(config.hosts, config.callers);
    this.router = new Router(config.router);
    this.limiter = new AuthLimiter(config.limiter);
    const preAuth = new PreAuthGuard(config.preAuth);
    this.preAuth = preAuth;
    const authenticated = (socket: Socket): void => preAuth.authenticated(socket);
    this.hostEndpoint = new HostEndpoint({ options: config.endpoint, tokens: this.tokens, router: this.router, limiter: this.limiter, authenticated });
    const clusterNode = config.cluster?.node;
    this.#board = new CallBoard(this.router, config.status.recentCalls, clusterNode);
    this.#statusCluster = clusterNode === undefined ? undefined : { node: clusterNode, peers: () => this.#cluster?.peers() ?? [] };
    const limiter = this.limiter;
    const router = this.router;
    const metrics = config.metrics
      ? new ServerMetrics({
          inFlight: () => this.executor.inFlight,
          hosts: () => router.hosts().length,
          tools: () => router.tools().length,
          mcpSessions: () => this.mcp.sessionCount,
          advertiseRejected: () => router.advertiseRejected,
          authFailures: () => limiter.failures,
          sessions: config.counters,
        })
      : undefined;
    this.#metrics = metrics;
    this.executor = new Executor({
      injection: this.router,
      board: this.#board,
      options: config.executor,
      ...(metrics && { observer: metrics }),
      ...(toolControl && { toolControl }),
      ...(fallback && { fallback }),
      ...(clusterNode !== undefined && { node: clusterNode }),
    });
    this.mcp = new McpDoor({ executor: this.executor, tools: this.router, auth: this.tokens, options: config.mcp, limiter: this.limiter, authenticated });
    this.#status = new StatusPage({
      router: this.router,
      board: this.#board,
      ...(this.#statusCluster && { cluster: this.#statusCluster }),
      auth: this.tokens,
      isCurrent: (principal) => this.tokens.isCurrent(principal as Principal),
      limiter: this.limiter,
      authenticated,
      secure: tls !== undefined,
      options: config.status,
    });
    const front: HttpFront = {
      hostPolicy: this.#hostPolicy,
      hostEndpoint: this.hostEndpoint,
      preAuth,
      mcp: this.mcp,
      status: this.#status,
      metrics,
      tokens: this.tokens,
      limiter: this.limiter,
      router: this.router,
      logger: log,
    };
    this.#http = createHttpServer(front, config.http, tls);
    this.#secure = tls !== undefined;
  }

  /**
   * Start listening. Rejects with the listen error (e.g. `EADDRINUSE`), with `RecordDirError` when
   * `recordDir` cannot be written, with `ClusterError` when the cluster cannot be joined. The first call first closes
   * the disk records an earlier server process left in flight (with `recordDir`; logged at info);
   * once listening, the open-files limit and the connection caps are logged at info.
   * @param port TCP port, default 0 (any free port)
   * @param host address to bind, default `127.0.0.1`
   * @throws RangeError for a port outside 0–65535
   */
  async listen(port = 0, host = '127.0.0.1'): Promise<ListenInfo> {
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`listen: port must be an integer 0-65535, got ${port}`);
    if (this.#closing) throw new Error('listen: the server is closed');
    if (!this.#recovered) {
      await this.executor.checkRecordDir(); // a record folder that cannot be written stops the start
      this.#recovered = true;
      await this.executor.closeInterruptedRecords(); // before the port opens: no new call races it
    }
    if (this.#clusterConfig !== undefined && this.#cluster === undefined) {
      // Joined before the port opens: a host's first hello already takes its identity lease.
      // Loaded only by a node that joins a cluster: the NATS client costs a single node nothing.
      const { ClusterNode } = await import('./cluster/cluster.js');
      this.#cluster = await ClusterNode.start(this.#clusterConfig, { router: this.router, executor: this.executor, logger: this.#logger, ...this.#clusterDeps });
      if (this.#closing) await this.#cluster.close();
    }
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error): void => reject(error);
      this.#http.once('error', onError);
      this.#http.listen(port, host, () => {
        this.#http.off('error', onError);
        resolve();
      });
    });
    if (!this.#listened) {
      this.#listened = true; // once listening: a failed listen says only why
      logDescriptors(this.#descriptors, this.#logger);
    }
    const address = this.#http.address() as AddressInfo;
    this.#hostPolicy.listening(address.address);
    const hostPart = address.address.includes(':') ? `[${address.address}]` : address.address;
    const s = this.#secure ? 's' : '';
    return {
      host: address.address,
      port: address.port,
      url: `ws${s}://${hostPart}:${address.port}`,
      mcpUrl: `http${s}://${hostPart}:${address.port}/mcp`,
    };
  }

  /**
   * What the server is doing now, as the status page shows it: connected hosts with their tools,
   * calls in flight (at most 500 listed; `callsInFlight` counts all) and the last
   * `statusRecentCalls` finished calls, newest first. Times in ms since the epoch.
   */
  status(): StatusSnapshot {
    return statusSnapshot(this.router, this.#board, this.#statusCluster);
  }

  /**
   * Token rotation without a restart (e.g. on a config reload): replace the host and caller
   * credentials at once, then close every host session whose token was removed or changed (close
   * 1008 "token revoked", its pending calls settle 69) and every MCP session opened with a caller
   * token that was removed or changed (its calls settle 130, and their answers are written first:
   * this waits at most `cancelGraceMs` + 1000 ms for them). Sessions of unchanged tokens are kept.
   * Other options are not reloaded.
   *
   * @throws TypeError (as the constructor) when the new credentials are invalid; nothing changes then
   */
  async updateCredentials(hosts: readonly HostCredential[], callers: readonly CallerCredential[]): Promise<CredentialsUpdate> {
    this.tokens.update(hosts, callers);
    const isCurrent = (principal: { role: string; name: string }): boolean => this.tokens.isCurrent(principal as Principal);
    const closedHosts = this.hostEndpoint.revoke(isCurrent);
    // The revoked callers' calls stop (130) and their answers are written before their sessions close.
    const closedCallers = await this.mcp.revoke(isCurrent, this.#cancelGraceMs + 2 * STOP_MARGIN_MS);
    this.#logger.info({ hosts: hosts.length, callers: callers.length, closedHosts, closedCallers }, 'credentials updated');
    return { closedHosts, closedCallers };
  }

  /**
   * Shut down: close every host session with 1001 (their calls settle 69 `server shutting down`, and
   * the hosts kill the work), stop any other call in flight (130) and wait for the executor to be
   * idle (at most `cancelGraceMs` + 500 ms) and for the MCP door to write those calls' answers (at
   * most 500 ms more) so MCP callers receive their results, then close every MCP session and the http
   * server with its connections. Leaves no timer running. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /** This node's cluster id, once `listen()` joined the cluster; `undefined` on a single node. */
  get node(): string | undefined {
    return this.#cluster?.node;
  }

  async #shutdown(): Promise<void> {
    // Leave the cluster first: other nodes' calls here stop, calls to their hosts settle 69.
    await this.#cluster?.close();
    const hostsClosed = this.hostEndpoint.close();
    this.executor.stop();
    await pTimeout(this.executor.whenIdle(), { milliseconds: this.#cancelGraceMs + STOP_MARGIN_MS, message: false });
    await this.mcp.close(STOP_MARGIN_MS); // the settled calls' answers are written before their sessions close
    this.#status.close();
    await hostsClosed;
    this.preAuth.close();
    if (this.#http.listening) {
      const closed = new Promise<void>((resolve) => this.#http.close(() => resolve()));
      this.#http.closeAllConnections();
      await closed;
    }
    await this.executor.close(); // the disk record's writer thread
  }

  /**
   * The metrics text and its content type (OpenMetrics), for a listener of the embedding program's
   * own (e.g. `toolwire serve --metrics-listen`); `undefined` with `metrics: false`.
   */
  async scrapeMetrics(): Promise<{ contentType: string; text: string } | undefined> {
    const metrics = this.#metrics;
    if (metrics === undefined) return undefined;
    return { contentType: metrics.contentType, text: await metrics.metrics() };
  }
}
