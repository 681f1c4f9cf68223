/**
 * A tool host that speaks protocol 2 over a raw WebSocket, for tests of live output on the server,
 * the MCP door and `toolwire call` (the tool host library does not stream yet). It advertises tools
 * and hands each call to a script that writes output: chunks of at most `maxChunkBytes`, each sent
 * only when the call's credit window has room (as a real host would), then a `result` with
 * `streamed` and whatever bytes were not streamed. Frames can also be sent by hand (`send`).
 */
import { once } from 'node:events';
import { type CallMessage, type ServerMessage, type ToolSpec, type WelcomeMessage, encodeOutputFrame, toWire } from '@toolwire/protocol';
import { WebSocket } from 'ws';

/** One call as the script sees it. */
export class StreamingCall {
  readonly message: CallMessage;
  /** Credits received for this call, bytes each. */
  readonly credits: number[] = [];
  /** Resolves with the reason of a `cancel` for this call. */
  readonly cancelled: Promise<'stop' | 'deadline'>;
  seq = 0;
  streamed = { stdout: 0, stderr: 0 };
  #window: number;
  readonly #maxChunk: number;
  readonly #host: StreamingHost;
  #wake: (() => void) | undefined;
  #onCancel!: (reason: 'stop' | 'deadline') => void;

  constructor(host: StreamingHost, message: CallMessage, welcome: WelcomeMessage) {
    this.#host = host;
    this.message = message;
    this.#window = welcome.output?.windowBytes ?? 0;
    this.#maxChunk = welcome.output?.maxChunkBytes ?? 0;
    this.cancelled = new Promise((resolve) => (this.#onCancel = resolve));
  }

  get id(): string {
    return this.message.id;
  }

  /** Bytes the call may still send before more credit. */
  get window(): number {
    return this.#window;
  }

  /** True while {@link write} waits for credit (the window has no room for its next chunk). */
  get waiting(): boolean {
    return this.#wake !== undefined;
  }

  /** Send `data` as `output` chunks (at most `maxChunkBytes` each), each once the window has room for it. */
  async write(stream: 'stdout' | 'stderr', data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
    for (let at = 0; at < bytes.length;) {
      const chunk = bytes.subarray(at, at + Math.min(this.#maxChunk, bytes.length - at));
      while (this.#window < chunk.length) await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#window -= chunk.length;
      this.sendChunk(stream, chunk);
      at += chunk.length;
    }
  }

  /** Send one `output` frame (binary, or JSON with `frames: 'json'`) with the next seq, ignoring the window. */
  sendChunk(stream: 'stdout' | 'stderr', chunk: Uint8Array, seq = this.seq): void {
    if (this.#host.frames === 'binary') this.#host.sendBinary(encodeOutputFrame(this.id, stream, seq, [chunk], chunk.length));
    else {
      const wire = toWire(chunk);
      this.#host.send({ type: 'output', id: this.id, stream, seq, data: wire.text, ...(wire.encoding && { encoding: wire.encoding }) });
    }
    this.seq = seq + 1;
    this.streamed[stream] += chunk.length;
  }

  /** Send the `result`: `rest` holds the bytes not streamed; `streamed` is what was (override to lie). */
  end(exitCode = 0, rest: { stdout?: Uint8Array | string; stderr?: Uint8Array | string } = {}, streamed?: unknown): void {
    const out = toWire(Buffer.from(rest.stdout ?? ''));
    const err = toWire(Buffer.from(rest.stderr ?? ''));
    const result: Record<string, unknown> = { type: 'result', id: this.id, stdout: out.text, stderr: err.text, exitCode };
    if (out.encoding) result.stdoutEncoding = out.encoding;
    if (err.encoding) result.stderrEncoding = err.encoding;
    const said = streamed === undefined ? (this.seq > 0 ? { ...this.streamed, chunks: this.seq } : undefined) : streamed;
    if (said !== null && said !== undefined) result.streamed = said;
    this.#host.send(result);
  }

  /** @internal */
  credit(bytes: number): void {
    this.credits.push(bytes);
    this.#window += bytes;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** @internal */
  cancel(reason: 'stop' | 'deadline'): void {
    this.#onCancel(reason);
  }
}

/** Options of {@link StreamingHost.connect}. */
export interface StreamingHostOptions {
  token: string;
  tools: ToolSpec[];
  /** Runs each call (a throw or rejection is a test bug: it is rethrown on the next tick). */
  onCall?: (call: StreamingCall) => void | Promise<void>;
  /** Offer only protocol 1 (an older host). Default false (offers v2 and v1). */
  v1?: boolean;
  /** How chunks travel: binary `output` frames (default, as the tool host sends them) or JSON `output` messages. */
  frames?: 'binary' | 'json';
}

/** A raw protocol-2 tool host on `url`. */
export class StreamingHost {
  readonly ws: WebSocket;
  readonly calls = new Map<string, StreamingCall>();
  /** Every frame received, in order. */
  readonly received: ServerMessage[] = [];
  welcome!: WelcomeMessage;
  readonly #options: StreamingHostOptions;

  private constructor(ws: WebSocket, options: StreamingHostOptions) {
    this.ws = ws;
    this.#options = options;
  }

  /** Connect, hello (the negotiated version), advertise; resolves once advertised. */
  static async connect(url: string, options: StreamingHostOptions): Promise<StreamingHost> {
    const ws = new WebSocket(url, options.v1 ? ['toolwire.v1'] : ['toolwire.v2', 'toolwire.v1'], { headers: { authorization: `Bearer ${options.token}` } });
    ws.on('error', () => {});
    const host = new StreamingHost(ws, options);
    let advertised!: () => void;
    const done = new Promise<void>((resolve) => (advertised = resolve));
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as ServerMessage;
      host.received.push(message);
      if (message.type === 'welcome') {
        host.welcome = message;
        host.send({ type: 'advertise', tools: options.tools });
      } else if (message.type === 'advertised') advertised();
      else host.#onMessage(message);
    });
    await once(ws, 'open');
    host.send({ type: 'hello', protocol: ws.protocol === 'toolwire.v2' ? 2 : 1, software: 'streaming-host (test)' });
    await done;
    return host;
  }

  /** How this host's chunks travel. */
  get frames(): 'binary' | 'json' {
    return this.#options.frames ?? 'binary';
  }

  /** Send one binary frame. */
  sendBinary(frame: Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
  }

  /** Send one frame as JSON. */
  send(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** Resolves with the call whose `call` frame is the `n`-th received (0-based), once it is. */
  async call(n = 0): Promise<StreamingCall> {
    for (;;) {
      const call = [...this.calls.values()][n];
      if (call) return call;
      await once(this.ws, 'message');
    }
  }

  /** Close the socket (1000) and wait for it to close. */
  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = once(this.ws, 'close');
    this.ws.close(1000);
    await closed;
  }

  #onMessage(message: ServerMessage): void {
    if (message.type === 'call') {
      const call = new StreamingCall(this, message, this.welcome);
      this.calls.set(message.id, call);
      const run = this.#options.onCall?.(call);
      if (run instanceof Promise) {
        run.catch((error: unknown) =>
          process.nextTick(() => {
            throw error;
          }),
        );
      }
    } else if (message.type === 'credit') {
      this.calls.get(message.id)?.credit(message.bytes);
    } else if (message.type === 'cancel') {
      this.calls.get(message.id)?.cancel(message.reason);
    }
  }
}
