/**
 * Defaults of every limit and timing (DESIGN §8). Each is an option of the server or the tool host;
 * these are the values used when the option is not given.
 */
export const Defaults = {
  /** Largest WebSocket frame accepted, bytes (ws `maxPayload`); larger → close 1009. 16 MiB. */
  maxPayload: 16 * 1024 * 1024,
  /** Server ping interval, ms. A host with no pong by the next ping is terminated (dead within 2×). */
  heartbeatMs: 10_000,
  /** Call deadline when neither the call nor the tool sets one, ms. */
  deadlineMs: 120_000,
  /** Time a stopped call waits for the host's partial output before settling 130 anyway, ms. Also the
   * host's SIGTERM → SIGKILL grace. */
  cancelGraceMs: 2_000,
  /** Tools one host may advertise; the rest are rejected. */
  maxToolsPerHost: 256,
  /** Largest advertised inputSchema, bytes of its JSON text. 64 KiB. */
  maxSchemaBytes: 64 * 1024,
  /** Deepest nesting of an advertised inputSchema (objects/arrays). */
  maxSchemaDepth: 32,
  /** Longest tool description, characters. */
  maxDescriptionChars: 4096,
  /** Calls in flight to one host; more → 75 at once. */
  maxInFlightPerHost: 256,
  /** Bytes queued on one host's socket (ws `bufferedAmount`); more → new calls 75. 8 MiB. */
  maxBufferedBytesPerHost: 8 * 1024 * 1024,
  /** Per-stream capture cap on the tool host, bytes (head + tail kept). 8 MiB. */
  maxCaptureBytes: 8 * 1024 * 1024,
  /** Bytes of each stream kept at the head of the model's projection. */
  projectionHeadBytes: 16_384,
  /** Bytes of each stream kept at the tail of the model's projection. */
  projectionTailBytes: 16_384,
  /** A socket that upgrades but sends no `hello` within this is closed 1008, ms. */
  helloTimeoutMs: 10_000,
  /** Wrong-shape frames tolerated per session before it is closed 1008. */
  maxBadFrames: 16,
  /** Time the host keeps reading a killed tool's pipes (grandchildren may hold them), ms. */
  drainMs: 500,
  /** Calls running at once on one tool host; more wait in its queue (a laptop's share of processes). */
  maxConcurrentCalls: 16,
  /** Calls waiting on one tool host for a place to run; more → 75 at once. */
  maxQueuedCalls: 256,
  /** Input bytes (call frame sizes) of the calls a tool host holds, running or waiting; more → 75 at once. 64 MiB. */
  maxInFlightInputBytes: 64 * 1024 * 1024,
  /** Protocol 2: output bytes a call may have sent and not yet been credited for (its window). 4 MiB. */
  outputWindowBytes: 4 * 1024 * 1024,
  /** Protocol 2: largest `output` chunk, decoded bytes. 256 KiB. */
  outputChunkBytes: 256 * 1024,
  /** Reconnect backoff of the tool host: first and largest delay before full jitter, ms. */
  reconnectBaseMs: 250,
  reconnectMaxMs: 30_000,
} as const;

/** Longest tool name, host name, or qualified `<host>__<tool>` name, characters (MCP/LLM tool-name limit). */
export const MAX_NAME_LENGTH = 64;

/** Tool and host names: `[A-Za-z0-9_-]{1,64}`. */
export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Separator of qualified names `<host>__<tool>`; host names may not contain it. */
export const QUALIFIER = '__';
