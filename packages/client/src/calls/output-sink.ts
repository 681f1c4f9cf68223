/**
 * The output of one call, as its tool source writes it (DESIGN §5 "Live output", §7). A source —
 * a subprocess's pipes, an in-process handler's `ctx.write` — only calls {@link OutputSink.write}
 * and {@link OutputSink.progress}; what happens to the bytes depends on the connection:
 *
 * - {@link BufferedOutput} (a v1 server, or a v2 server that offers no `welcome.output`): the bytes
 *   are kept head + tail per stream (the capture cap) and travel in the call's one `result`, as
 *   before live output existed. Never waits.
 * - {@link StreamingOutput} (`welcome.output` present): the bytes leave as `output` chunks within
 *   the call's credit window (`output-channel.ts`); the `result` carries only what was not sent.
 *
 * Both end the same way: {@link CallOutput.take} (what the result still carries) or
 * {@link CallOutput.close} / {@link CallOutput.fail} (a whole capture, for in-process tools).
 */
import { type Capture, type Failure, HeadTailBuffer, failureCapture } from '@toolwire/protocol';
import { headTailSplit } from './capture-cap.js';

/** One of a call's two output streams. */
export type OutputStreamName = 'stdout' | 'stderr';

/** What a tool source writes into (a subprocess's pipe reader, an in-process tool's `ctx`). */
export interface OutputSink {
  /**
   * Take `bytes` of `stream` (they are not copied: do not change them afterwards). Resolves when
   * the source may write more: at once while the call's window holds, else once credit came (or
   * the call ended). Never rejects. Bytes written after the call ended are dropped.
   */
  write(stream: OutputStreamName, bytes: Uint8Array): Promise<void>;
  /** Say how far the tool got (`progress` message, no window; sent at most every 100 ms, latest wins). */
  progress(message?: string): void;
}

/**
 * How a source that reads pipes is held to the window: it may read {@link CallOutput.allowance}
 * bytes, then stops reading (the tool blocks in write(2)) until `allow` gives more. `Infinity`:
 * read freely from now on (the call is ending).
 */
export interface ReadGate {
  allow(bytes: number): void;
}

/** Bytes of each stream sent in `output` chunks, and how many chunks (`result.streamed`). */
export interface StreamedCounts {
  stdout: number;
  stderr: number;
  chunks: number;
}

/** What the `result` still carries: the bytes of each stream not sent in chunks (capped head + tail). */
export interface Remainder {
  stdout: Uint8Array;
  stderr: Uint8Array;
}

/** A call's output as the call layer sees it. */
export interface CallOutput extends OutputSink {
  /** Whether bytes leave as `output` chunks. */
  readonly streaming: boolean;
  /**
   * Take `bytes` of `stream` as a pipe source reads them: copied before this returns (the source
   * reuses its read buffer). A pipe source is held by {@link allowance} and its {@link ReadGate}, not
   * by a promise. Bytes copied after the call ended are dropped.
   */
  copy(stream: OutputStreamName, bytes: Uint8Array): void;
  /** What was streamed, or `undefined` when no chunk was sent (the `result` then has no `streamed`). */
  readonly streamed: StreamedCounts | undefined;
  /** Bytes a pipe source may read before it waits for its {@link ReadGate}; `undefined`: no bound. */
  readonly allowance: number | undefined;
  /** True while a pipe source must not read (its allowance is used up and the call is not ending). */
  readonly held: boolean;
  /** True while a writer should wait: more bytes wait than the window can take now. */
  readonly blocked: boolean;
  /** Where allowance granted later goes (one gate per call). */
  gate(gate: ReadGate): void;
  /** The call is ending (stop, deadline, lost connection): nothing waits for the window any more. */
  end(): void;
  /** Stop taking output and return what the result still carries. Later writes are dropped. */
  take(): Remainder;
  /**
   * `stderr` (a remainder from {@link take}) made ready for a `toolwire: <reason>` line: a newline
   * when the remainder is empty but what was streamed of stderr did not end with one, so the capture
   * gets the same line break a non-streamed one would.
   */
  beforeReason(stderr: Uint8Array): Uint8Array;
  /** The capture of an in-process tool: what it wrote ({@link take}), then `capture`'s streams. Capped per stream. */
  close(capture: Capture): Capture;
  /** `failureCapture(failure, reason)` after what the tool wrote. A closed output returns it without output. */
  fail(failure: Failure, reason: string): Capture;
}

const NEWLINE = 0x0a;
const LINE_BREAK = new Uint8Array([NEWLINE]);
/** A shared, settled promise: what {@link OutputSink.write} returns when the source need not wait. */
export const WRITABLE: Promise<void> = Promise.resolve();

/** Shared by both kinds: the last stderr byte (for {@link CallOutput.beforeReason}) and composing captures. */
abstract class BaseOutput implements CallOutput {
  abstract readonly streaming: boolean;
  abstract readonly streamed: StreamedCounts | undefined;
  abstract readonly allowance: number | undefined;
  abstract readonly held: boolean;
  abstract readonly blocked: boolean;
  protected readonly capBytes: number;
  /** The last byte written to stderr (-1: none yet). */
  protected lastStderr = -1;
  protected closed = false;

  constructor(capBytes: number) {
    this.capBytes = capBytes;
  }

  abstract write(stream: OutputStreamName, bytes: Uint8Array): Promise<void>;
  abstract copy(stream: OutputStreamName, bytes: Uint8Array): void;
  abstract progress(message?: string): void;
  abstract gate(gate: ReadGate): void;
  abstract end(): void;
  /** Close and hand the remainder's two buffers over (they still take `close`'s capture). */
  protected abstract seal(): { stdout: HeadTailBuffer; stderr: HeadTailBuffer };

  take(): Remainder {
    const { stdout, stderr } = this.seal();
    return { stdout: stdout.bytes('stdout'), stderr: stderr.bytes('stderr') };
  }

  beforeReason(stderr: Uint8Array): Uint8Array {
    return stderr.length === 0 && this.lastStderr !== -1 && this.lastStderr !== NEWLINE ? LINE_BREAK : stderr;
  }

  close(capture: Capture): Capture {
    if (this.closed) return capture;
    const rest = this.seal();
    rest.stdout.push(capture.stdout);
    rest.stderr.push(capture.stderr);
    return { ...capture, stdout: rest.stdout.bytes('stdout'), stderr: rest.stderr.bytes('stderr') };
  }

  fail(failure: Failure, reason: string): Capture {
    if (this.closed) return failureCapture(failure, reason);
    const rest = this.take();
    return failureCapture(failure, reason, { stdout: rest.stdout, stderr: this.beforeReason(rest.stderr) });
  }

  protected newBuffer(): HeadTailBuffer {
    const { head, tail } = headTailSplit(this.capBytes);
    return new HeadTailBuffer(head, tail);
  }
}

/**
 * Output of a call on a connection without live output: kept head + tail per stream (the capture
 * cap), all of it in the `result`. Memory per call: at most the cap per stream.
 */
export class BufferedOutput extends BaseOutput {
  readonly streaming = false;
  readonly streamed = undefined;
  readonly allowance = undefined;
  readonly held = false;
  readonly blocked = false;
  readonly #stdout: HeadTailBuffer;
  readonly #stderr: HeadTailBuffer;

  /** @param capBytes the per-stream capture cap, bytes (`captureCapBytes`) */
  constructor(capBytes: number) {
    super(capBytes);
    this.#stdout = this.newBuffer();
    this.#stderr = this.newBuffer();
  }

  write(stream: OutputStreamName, bytes: Uint8Array): Promise<void> {
    if (this.closed || bytes.length === 0) return WRITABLE;
    if (stream === 'stdout') this.#stdout.push(bytes);
    else {
      this.#stderr.push(bytes);
      this.lastStderr = bytes[bytes.length - 1]!;
    }
    return WRITABLE;
  }

  copy(stream: OutputStreamName, bytes: Uint8Array): void {
    // A copy of its own size that owns its memory (`Buffer.from` would take small ones from Node's shared pool).
    if (!this.closed && bytes.length > 0) void this.write(stream, new Uint8Array(bytes));
  }

  progress(): void {
    // No live output on this connection: progress has nowhere to go.
  }

  gate(): void {}

  end(): void {}

  protected seal(): { stdout: HeadTailBuffer; stderr: HeadTailBuffer } {
    this.closed = true;
    return { stdout: this.#stdout, stderr: this.#stderr };
  }
}

export { BaseOutput };
