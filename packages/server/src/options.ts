/**
 * Server options: the shapes a user passes to `ToolwireServer` and their TSDoc (DESIGN §8). Every
 * limit is an option; the defaults are in `ServerDefaults` (`defaults.ts`), and `resolveServerConfig`
 * (`config.ts`) checks them and cuts them into what each component reads.
 */
import type { ClusterOptions } from './cluster/options.js';
import type { Logger as PinoLogger } from 'pino';
import type { ToolControl } from './executor/gates.js';
import type { Fallback } from './executor/request.js';

/** The logging surface toolwire uses (a pino logger fits). */
export type Logger = Pick<PinoLogger, 'debug' | 'info' | 'warn' | 'error'>;

/**
 * A credential's secret: the token itself, or only its SHA-256 digest (64 lowercase hex digits,
 * `sha256(token)` of its UTF-8 bytes) for a caller that must not hold the token in memory or at rest
 * (the `toolwire` state folder keeps digests only). Exactly one of the two.
 */
export type CredentialSecret = { token: string; tokenDigest?: never } | { tokenDigest: string; token?: never };

/** A host identity: connections presenting the token are host `name` (`[A-Za-z0-9-]`, single `_` allowed, no `__`). */
export type HostCredential = { name: string } & CredentialSecret;

/** A caller identity for the MCP door: `name` becomes the agent id; `grant` lists callable tool names (default `["*"]`). */
export type CallerCredential = { name: string; grant?: readonly string[] } & CredentialSecret;

/** How tool names from different hosts are exposed (DESIGN §2). */
export type Naming = 'qualified' | 'bare';

/** Certificate and private key of a TLS server, PEM. */
export interface ServerTls {
  cert: string | Buffer;
  key: string | Buffer;
}

/** Options of `ToolwireServer`. All times in ms, sizes in bytes; each default is in `ServerDefaults` (`defaults.ts`). */
export interface ToolwireServerOptions {
  /** Host tokens → host identities. Default: none (no host can connect unless `loopbackDev`). */
  hosts?: readonly HostCredential[];
  /** Caller tokens for the MCP door. Default: none. */
  callers?: readonly CallerCredential[];
  /** `qualified` (default): `<host>__<tool>`; `bare`: first host keeps a name, later duplicates rejected. */
  naming?: Naming;
  /** Largest frame accepted (ws `maxPayload`); default 16 MiB; over → close 1009. */
  maxPayload?: number;
  /** Ping interval; default 10000. A host missing one pong is terminated (dead within 2×). */
  heartbeatMs?: number;
  /** Default call deadline; default 120000. */
  deadlineMs?: number;
  /** How long a stopped call waits for partial output before settling 130; default 2000. */
  cancelGraceMs?: number;
  /** Tools per host; default 256. */
  maxToolsPerHost?: number;
  /** inputSchema JSON size; default 65536. */
  maxSchemaBytes?: number;
  /** inputSchema nesting depth; default 32. */
  maxSchemaDepth?: number;
  /** Calls in flight per host; default 256; over → 75. */
  maxInFlightPerHost?: number;
  /** Socket send-buffer bytes per host; default 8 MiB; over → 75. */
  maxBufferedBytesPerHost?: number;
  /** Time from upgrade to `hello`; default 10000; over → close 1008. */
  helloTimeoutMs?: number;
  /** Wrong-shape frames per session before close 1008; default 16. */
  maxBadFrames?: number;
  /** Disk record root (`<root>/<agent>/<call id>/{input,output}.json`); default: no record. */
  recordDir?: string;
  /** Projection head/tail bytes per stream; default 16384 each. */
  projectionHeadBytes?: number;
  projectionTailBytes?: number;
  /** Loopback dev mode: hosts connecting from 127.0.0.1/::1 without a token may name themselves in `hello`. Default false. */
  loopbackDev?: boolean;
  /** Longest tool description an advertise may carry, characters; default 4096; longer → that tool rejected. */
  maxDescriptionChars?: number;
  /**
   * Open host WebSocket connections in total (including those before `hello`); over → HTTP 503 at
   * the upgrade. Default: half of (open-files limit − 64), at most 1024 (480 for a limit of 1024).
   */
  maxConnections?: number;
  /** Open connections per host identity (token); default 4; over → HTTP 429 at the upgrade. Loopback dev hosts count only toward `maxConnections`. */
  maxConnectionsPerHost?: number;
  /**
   * Origins (`scheme://host[:port]`, compared exactly, case-insensitively) allowed to open a host
   * connection or call the MCP door from a browser. A request that carries an `Origin` header not in
   * this list gets HTTP 403; requests without `Origin` (tool hosts, CLI, SDK clients) are unaffected.
   * Default `[]`: browser-originated requests are refused.
   */
  allowedOrigins?: readonly string[];
  /**
   * DNS-rebinding protection: hostnames (no port; IPv6 in brackets) a request's `Host` header may
   * name besides the loopback names (`localhost`, `*.localhost`, 127.x, `[::1]`), or `["*"]` for
   * any. Not given: requests to a server listening on a loopback address must name a loopback host,
   * and a server on another address checks nothing. Given: checked on every address. A refused
   * request or upgrade gets HTTP 403 with the reason.
   */
  allowedHosts?: readonly string[];
  /** Negotiate permessage-deflate with hosts that offer it; default false. When on, `maxPayload` bounds the inflated size (→ 1009). */
  perMessageDeflate?: boolean;
  /** Failed authentications from one address within `authFailureWindowMs` before it is refused with 429; default 10. */
  authMaxFailures?: number;
  /** Window in which failed authentications are counted, ms; default 60000. */
  authFailureWindowMs?: number;
  /** First refusal period after `authMaxFailures`, ms; doubles with each further failure, up to max(authBlockMs, authFailureWindowMs); default 1000. */
  authBlockMs?: number;
  /** Addresses the failure limiter remembers at most (oldest forgotten first); default 10000. */
  authMaxTrackedAddresses?: number;
  /**
   * Connections not yet authenticated (TCP accepted, no request with a valid token yet), in total;
   * a new one over the cap closes the oldest. Default: an eighth of (open-files limit − 64), 8 to
   * 1024 (120 for a limit of 1024). Authenticated hosts and callers are never counted.
   */
  maxPreAuthConnections?: number;
  /**
   * Connections not yet authenticated from one address (IPv4 address, IPv6 /64); a new one over
   * the cap closes that address's oldest. Default: a quarter of `maxPreAuthConnections`, 2 to 64.
   */
  maxPreAuthPerAddress?: number;
  /** Time from accepting a connection to its first authenticated request (TLS handshake and headers included), ms; default 10000; over → connection closed. */
  preAuthTimeoutMs?: number;
  /** Time to receive a request's headers, ms (node:http `headersTimeout`); default 10000; over → HTTP 408, connection closed. At most `requestTimeoutMs`. */
  headersTimeoutMs?: number;
  /** Time to receive a whole request, body included, ms (node:http `requestTimeout`); default 60000; over → HTTP 408, connection closed. */
  requestTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this long, ms (node:http `keepAliveTimeout`); default 5000. */
  keepAliveTimeoutMs?: number;
  /** Largest request head (request line and headers), bytes (node:http `maxHeaderSize`); default 16384; over → HTTP 431. */
  maxHeaderBytes?: number;
  /** Headers read per request (node:http `maxHeadersCount`); default 100; the rest are ignored. */
  maxHeadersCount?: number;
  /** Default: a silent pino logger. */
  logger?: Logger;
  /**
   * Keep metrics and serve them at `GET /metrics` (OpenMetrics text, `Authorization: Bearer <caller
   * token>`; see README "Operating toolwire"). `false`: no metrics are kept and `/metrics` is 404.
   * Default `true`.
   */
  metrics?: boolean;
  /** Policy hook consulted before each call (fails closed). Default: none. */
  toolControl?: ToolControl;
  /** Local tools tried when no connected host advertises the name. Default: none (→ 127). */
  fallback?: Fallback;
  /** Join a cluster of server nodes over NATS (DESIGN §10). Default: none (one node, nothing new). */
  cluster?: ClusterOptions;
  /** Open MCP sessions at most; default 1024; at the limit the least recently active idle session is evicted, if none is idle → HTTP 503. */
  mcpMaxSessions?: number;
  /** Open MCP sessions of one caller at most; default 64; at the limit that caller's least recently active idle session is evicted, if none is idle → HTTP 503. */
  mcpMaxSessionsPerCaller?: number;
  /** Open 2026-07-28 `subscriptions/listen` streams of one caller at most; default 16; more → HTTP 503 naming the limit (the MCP SDK bounds all callers' together at 1024). */
  mcpMaxListensPerCaller?: number;
  /** An MCP session with no POST or DELETE open for this long expires (a GET stream does not keep it), ms; default 900000 (15 min). */
  mcpSessionIdleMs?: number;
  /** Levels of nesting a `tools/call`'s `arguments` may have at `/mcp` (the object itself is level 1); default 1000; deeper → HTTP 400 with JSON-RPC `-32602` naming the limit. */
  mcpMaxInputDepth?: number;
  /** Largest MCP POST body, bytes; default 4 MiB; more → HTTP 413. */
  mcpMaxRequestBodyBytes?: number;
  /**
   * MCP door: a `tools/call` that carries `_meta.progressToken` gets a `notifications/progress` at
   * least this often while it runs, even when the tool is silent, ms; default 5000.
   */
  progressIntervalMs?: number;
  /**
   * Live output (protocol 2): bytes of output a call may send before the server's first `credit`
   * (`welcome.output.windowBytes`); default 4 MiB. The server credits a call once half of this has
   * been passed on to its consumer. At least `outputChunkBytes`.
   */
  outputWindowBytes?: number;
  /** Live output: largest `output` chunk, decoded bytes (`welcome.output.maxChunkBytes`); default 256 KiB; larger → that call 76. */
  outputChunkBytes?: number;
  /**
   * Per-stream cap of the capture the server builds from a streamed call (head + tail kept, one
   * marker line between), bytes; default 8 MiB, lowered as on the host to
   * `floor((maxPayload − 16 KiB) · 3/8)`, so a streamed capture is byte-identical to a non-streamed
   * one. Set it to the hosts' `maxCaptureBytes` when they change theirs.
   */
  maxCaptureBytes?: number;
  /**
   * Disk record: bytes of each stream appended to `<call>/stdout.log` / `stderr.log` while a call
   * streams; default 64 MiB. Past it the log ends with one `[... toolwire: … stops here …]` line
   * (`output.json` still gets the whole capture).
   */
  maxRecordLogBytes?: number;
  /**
   * Compile time of advertised schemas one host identity may spend at once, and earns back per
   * `schemaCompileWindowMs`, ms; default 10000. A tool whose schema would need more is rejected
   * with the reason ("advertise again later"); a schema compiled before (by any host) costs nothing.
   */
  schemaCompileBudgetMs?: number;
  /** The window of `schemaCompileBudgetMs`, ms; default 60000. */
  schemaCompileWindowMs?: number;
  /**
   * Largest validator code one advertised schema may compile to, bytes; default 131072 (128 KiB,
   * about 400 plain properties); more → that tool rejected. The event loop parses that code once.
   */
  maxSchemaCodeBytes?: number;
  /**
   * Time a frame over 256 KiB may take to decode (off the event loop), ms; default 10000; longer, or
   * more memory than the decoder has (512 MiB) → close 1009.
   */
  frameDecodeTimeoutMs?: number;
  /**
   * Advertise frames kept decoded and examined, by their exact bytes, so hosts that send the same
   * frame (a fleet with one manifest) are decoded and examined once: bytes of frame text at most
   * (least recently used out first; the examined form kept beside a frame is of the same order);
   * default 4194304 (4 MiB); 0 keeps none. Names, schema compile budget and registry are still
   * checked per host.
   */
  advertiseCacheBytes?: number;
  /**
   * Warning lines logged about one host per `logWindowMs`, and error lines of failed disk record writes
   * per `logWindowMs`; default 20; more are counted and reported as one "N more … suppressed" line.
   */
  maxLogLinesPerHost?: number;
  /** The window of `maxLogLinesPerHost`, ms; default 10000. */
  logWindowMs?: number;
  /** Status page (`/status`, `toolwire status`): finished calls kept and shown, newest first; default 50. */
  statusRecentCalls?: number;
  /** Status page: live feeds (`/status/events`) open at once; default 16; more → HTTP 503. */
  statusMaxViewers?: number;
  /** Status page: a browser session's life from its login, ms; default 43200000 (12 h). */
  statusSessionMs?: number;
  /** Status page: browser sessions kept at once; default 64; a new login over it ends the oldest. */
  statusMaxSessions?: number;
  /**
   * Serve TLS: tool hosts dial `wss://`, callers use `https://…/mcp`. `cert` and `key` in PEM (a
   * chain may follow the leaf in `cert`). TLS 1.2 at least. Default: plain `ws://` / `http://`.
   */
  tls?: ServerTls;
}
