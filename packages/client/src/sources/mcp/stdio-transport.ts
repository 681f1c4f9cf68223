/**
 * The MCP SDK `Transport` of a stdio MCP server as a tool host runs it (DESIGN §7 "MCP servers"):
 * the server is spawned directly (no shell) `detached`, so it leads its own process group, and is
 * registered with the host's orphan reaper (`subprocess/reaper.ts`) like a subprocess tool — when
 * the host dies, even by SIGKILL, the reaper kills the group, and (Linux) every process that still
 * carries its `TOOLWIRE_CALL_ID`, so no server or `npx` grandchild survives. Messages are JSON
 * lines; a line longer than `maxMessageBytes` ends the server (it is killed, the source restarts
 * it). A line that is not a JSON-RPC message is reported to `onerror` and skipped. Each line is
 * parsed once; a result response (what the server sends most) is passed on after a check of its
 * shape, as its receiver validates the result itself (the SDK client, or `tool-calls.ts`), the rest
 * is validated with the SDK's `JSONRPCMessageSchema`. Messages sent in one turn of the event loop
 * leave in one write: stdin is corked at the turn's first message and uncorked on `setImmediate`,
 * so the requests of every call frame read in that turn (not only those of one read, as a per-tick
 * coalescer has it) reach the server together, and none waits past the turn. What waits for a server
 * that does not read its stdin is bounded ({@link StdioServerTransport.send}: over 2 × `maxMessageBytes`
 * the server is stopped, e.g. one that sends requests without end and never reads their answers). The
 * last stderr lines are kept (bounded) for the reason of a death.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { killGroup } from '../../subprocess/process-group.js';
import { forgetGroup, toolStarting } from '../../subprocess/reaper.js';
import { type McpClientSdk, loadMcpClientSdk } from './sdk.js';

/** Bytes of the server's stderr kept (its tail) for the reason of a death. */
const STDERR_TAIL_BYTES = 2048;

/** Why the host stopped a live server: it closed its stdin or its stdout, or did not read its stdin (`unread`). */
export type Cut = 'stdin' | 'stdout' | 'unread';

/** How long stdout is still read after the server exited, ms. */
const DRAIN_MS = 200;

/** How long writes to a stdin that broke wait for the server's exit before they fail, ms (see {@link StdioServerTransport.send}). */
const BROKEN_PIPE_MS = 1000;

const NEWLINE = 0x0a;
const SENT = Promise.resolve();

/** One promise for the writes that wait, and its settle (resolve, or reject with `error`). */
interface Waiting {
  promise: Promise<void>;
  settle: (error?: Error) => void;
}

function waiting(): Waiting {
  let settle!: (error?: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error));
  });
  return { promise, settle };
}

/**
 * True for a JSON-RPC result response — `{jsonrpc: "2.0", id, result: {…}}` and nothing else, as the
 * SDK's strict `JSONRPCResultResponseSchema` has it; its `result` is validated by its receiver.
 */
function isResultResponse(value: unknown): value is JSONRPCMessage {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  const result = v.result;
  return (
    v.jsonrpc === '2.0' &&
    (typeof v.id === 'string' || Number.isInteger(v.id)) &&
    typeof result === 'object' &&
    result !== null &&
    !Array.isArray(result) &&
    Object.keys(v).length === 3
  );
}

/** The id of `value` when it looks like a response (an id, no method, a result or an error key). */
function responseId(value: unknown): string | number | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v.method !== undefined || !('result' in v || 'error' in v)) return undefined;
  return typeof v.id === 'string' || Number.isSafeInteger(v.id) ? (v.id as string | number) : undefined;
}

/** What to run. */
export interface StdioLaunch {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Largest message line, bytes. */
  maxMessageBytes: number;
  /** SIGTERM → SIGKILL grace when closed, ms. */
  killGraceMs: number;
}

/** How the server process ended: exit code or signal, or why it never started. */
export interface StdioExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
  /** It closed its stdin or its stdout and lived on, or did not read its stdin, so the host stopped it (see {@link StdioServerTransport.cut}). */
  cut?: Cut;
  /** The last bytes it wrote to stderr (UTF-8, at most 2 KiB). */
  stderr: string;
}

/** A stdio MCP server process as an SDK transport. */
export class StdioServerTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  readonly #launch: StdioLaunch;
  #child: ChildProcessWithoutNullStreams | undefined;
  #pid: number | undefined;
  #exit: StdioExit | undefined;
  #stderr = '';
  #closed = false;
  #killTimer: NodeJS.Timeout | undefined;
  /** stdin is corked until the end of this turn of the event loop (see {@link send}). */
  #corked = false;
  readonly #uncork = (): void => {
    this.#corked = false;
    this.#child?.stdin.uncork(); // a no-op on a stream that ended or was destroyed meanwhile
  };
  /**
   * The writes waiting for stdin's next 'drain' or, once stdin broke, for the server's end (see
   * {@link send}); settled at the drain, at the end, or failed {@link BROKEN_PIPE_MS} after stdin broke.
   */
  #waiting: Waiting | undefined;
  readonly #wake = (error?: Error): void => {
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.settle(error);
  };
  /** Stdin broke and the server did not exit within {@link BROKEN_PIPE_MS}: writes fail at once. */
  #broken = false;
  #brokenTimer: NodeJS.Timeout | undefined;
  /** Its stdout ended while it runs: stopped if it has not exited {@link BROKEN_PIPE_MS} later. */
  #stdoutTimer: NodeJS.Timeout | undefined;
  #cut: Cut | undefined;
  /** The start of a line not finished yet, and its size in bytes. */
  #partial: Buffer[] = [];
  #partialBytes = 0;
  /** A line was too long: the server is being killed, nothing more of it is read. */
  #overflowed = false;
  /** The SDK's message schema and line format, loaded by {@link start} (`sdk.ts`). */
  #sdk: McpClientSdk | undefined;

  constructor(launch: StdioLaunch) {
    this.#launch = launch;
  }

  /** The server's process group (its pid), once started. */
  get pid(): number | undefined {
    return this.#pid;
  }

  /**
   * The pipe it closed while it lives on — stdin (nothing can reach it) or stdout (nothing of it can
   * reach the host) — once the host is stopping it for that ({@link BROKEN_PIPE_MS} after the pipe closed);
   * or `unread`: more than 2 × `maxMessageBytes` waited to be written to its stdin, and it was stopped.
   */
  get cut(): Cut | undefined {
    return this.#cut;
  }

  /** The last bytes it wrote to stderr so far (UTF-8, at most 2 KiB). */
  get stderr(): string {
    return this.#stderr;
  }

  /** How it ended, once it did. */
  get exit(): StdioExit | undefined {
    return this.#exit;
  }

  /**
   * Load the SDK (`sdk.ts`), then spawn the server. Rejects when either fails, or when {@link close}
   * came first (nothing is spawned then).
   */
  async start(): Promise<void> {
    this.#sdk = await loadMcpClientSdk();
    if (this.#closed) throw new Error('the MCP server transport was closed before it started');
    return this.#spawn();
  }

  #spawn(): Promise<void> {
    const l = this.#launch;
    const id = `mcp-${randomBytes(9).toString('base64url')}`;
    const started = toolStarting(id); // the reaper learns of the server before it runs
    return new Promise<void>((resolve, reject) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(l.command, l.args, { cwd: l.cwd, env: { ...l.env, TOOLWIRE_CALL_ID: id }, shell: false, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      } catch (error) {
        started(undefined);
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      this.#child = child;
      child.on('error', (error) => {
        if (child.pid !== undefined) return; // a failed kill changes nothing
        started(undefined);
        this.#ended({ code: null, signal: null, error, stderr: '' });
        reject(error);
      });
      if (child.pid === undefined) return; // 'error' follows
      this.#pid = child.pid;
      started(child.pid);
      child.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
      child.stderr.on('data', (chunk: Buffer) => {
        this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
      });
      for (const s of [child.stdin, child.stdout, child.stderr]) s.on('error', () => {}); // EPIPE, a destroyed pipe
      child.stdin.once('close', () => {
        if (this.#closed) return;
        // The server is dying (its exit follows) or closed its stdin and lives on: bound the wait.
        this.#brokenTimer = setTimeout(() => {
          this.#broken = true;
          this.#cutOff('stdin'); // nothing can reach it again: stopped (before the writes fail: their calls see why)
          this.#wake(new Error('the MCP server is not running'));
        }, BROKEN_PIPE_MS);
        this.#brokenTimer.unref();
      });
      child.stdout.once('end', () => {
        if (this.#closed) return;
        // The server is exiting (its exit follows), or it closed its stdout and lives on, unable to
        // answer anything: bound the wait, then stop it (its calls then end 69 with this reason).
        this.#stdoutTimer = setTimeout(() => this.#cutOff('stdout'), BROKEN_PIPE_MS);
        this.#stdoutTimer.unref();
      });
      child.on('exit', (code, signal) => {
        // What it wrote last may still be in the pipe: read stdout to its end (bounded: a grandchild may hold it).
        const end = (): void => this.#ended({ code, signal, stderr: this.#stderr });
        if (child.stdout.readableEnded) return end();
        const timer = setTimeout(end, DRAIN_MS);
        child.stdout.once('end', () => {
          clearTimeout(timer);
          end();
        });
      });
      resolve();
    });
  }

  /** Split `chunk` into lines (holding an unfinished one, up to `maxMessageBytes`) and handle each. */
  #read(chunk: Buffer): void {
    const max = this.#launch.maxMessageBytes;
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      if (this.#exit !== undefined || this.#overflowed) return;
      let line = chunk.subarray(start, end);
      start = end + 1;
      if (this.#partialBytes > 0) {
        this.#partial.push(line);
        line = Buffer.concat(this.#partial, this.#partialBytes + line.length);
        this.#partial = [];
        this.#partialBytes = 0;
      }
      if (line.length > max) return this.#tooLong();
      this.#line(line.toString('utf8'));
    }
    if (start === chunk.length || this.#exit !== undefined || this.#overflowed) return;
    this.#partialBytes += chunk.length - start;
    if (this.#partialBytes > max) return this.#tooLong();
    this.#partial.push(chunk.subarray(start));
  }

  #tooLong(): void {
    this.#overflowed = true;
    this.#partial = [];
    this.#partialBytes = 0;
    this.onerror?.(new Error(`sent a message longer than ${this.#launch.maxMessageBytes} bytes`));
    this.#kill('SIGKILL');
  }

  /** One line: JSON (a `\r` before the newline is whitespace to it), then a JSON-RPC message. */
  #line(text: string): void {
    let message: JSONRPCMessage;
    let value: unknown;
    try {
      value = JSON.parse(text);
      message = isResultResponse(value) ? value : this.#sdk!.JSONRPCMessageSchema.parse(value);
    } catch (error) {
      const why = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 200); // zod's is multi-line JSON
      this.onerror?.(new Error(`wrote a line that is not a JSON-RPC message: ${why}`));
      // A response to a request of ours that is not JSON-RPC (`"result": null`, a string…): its request
      // fails now with the reason, rather than waiting for its deadline (a call: 124) or timeout.
      const id = responseId(value);
      if (id !== undefined) this.onmessage?.({ jsonrpc: '2.0', id, error: { code: -32603, message: `its answer is not a JSON-RPC response (${why})` } });
      return;
    }
    this.onmessage?.(message);
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    const sdk = this.#sdk;
    if (stdin === undefined || sdk === undefined || this.#exit !== undefined || this.#broken) return Promise.reject(new Error('the MCP server is not running'));
    // Stdin broke before the exit is known (a dying server): the request is lost; it settles with the
    // server's end, after its calls ended 69 with the exit's reason (not as a failed request, 70).
    if (stdin.destroyed) return (this.#waiting ??= waiting()).promise;
    const line = sdk.serializeMessage(message);
    if (!this.#corked) {
      this.#corked = true;
      stdin.cork();
      setImmediate(this.#uncork);
    }
    // Resolved at once when the pipe takes it; else when it drained (backpressure on a slow reader).
    // The writes that wait share one drain: a listener per write would pile up with the requests of
    // a burst (Node warns past 10).
    if (stdin.write(line)) return SENT;
    // It does not read what it is sent (e.g. it floods requests and never reads their answers): stop it
    // rather than hold its stdin's writes without bound. Its calls end 69 with the reason.
    if (stdin.writableLength > 2 * this.#launch.maxMessageBytes) this.#cutOff('unread');
    if (this.#waiting === undefined) {
      this.#waiting = waiting();
      stdin.once('drain', () => this.#wake());
    }
    return this.#waiting.promise;
  }

  /** Stop the server: SIGTERM to its group, SIGKILL after the grace; resolves when it exited. */
  close(): Promise<void> {
    if (this.#exit !== undefined || this.#child === undefined) {
      this.#ended(this.#exit ?? { code: null, signal: null, stderr: this.#stderr });
      return Promise.resolve();
    }
    const child = this.#child;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin.end();
    this.#stop();
    return exited;
  }

  /** It closed `pipe` and lives on, or does not read: stop it, unless it is being stopped already ({@link close}). */
  #cutOff(pipe: Cut): void {
    if (this.#killTimer !== undefined || this.#exit !== undefined) return;
    this.#cut = pipe;
    this.#stop();
  }

  /** SIGTERM to its group, SIGKILL after the grace; once. */
  #stop(): void {
    if (this.#killTimer !== undefined) return;
    this.#kill('SIGTERM');
    this.#killTimer = setTimeout(() => this.#kill('SIGKILL'), this.#launch.killGraceMs);
    this.#killTimer.unref();
  }

  #kill(signal: NodeJS.Signals): void {
    killGroup(this.#pid, signal);
  }

  #ended(exit: StdioExit): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#exit = this.#cut !== undefined ? { ...exit, cut: this.#cut } : exit;
    clearTimeout(this.#killTimer);
    clearTimeout(this.#brokenTimer);
    clearTimeout(this.#stdoutTimer);
    killGroup(this.#pid, 'SIGKILL'); // what is left of its group (grandchildren)
    forgetGroup(this.#pid);
    for (const s of [this.#child?.stdin, this.#child?.stdout, this.#child?.stderr]) s?.destroy();
    this.onclose?.();
    this.#wake(); // the waiting writes are lost with the server; their calls ended in onclose
  }
}
