/** What a host session reads and needs (`host-session.ts`). */
import type { Corkable } from '@toolwire/protocol';
import type { WebSocket } from 'ws';
import type { SessionCounters } from '../observe/counters.js';
import type { Logger } from '../options.js';
import type { Router } from '../router/router.js';
import type { HostIdentity, WelcomeOptions } from './hello.js';
import type { FrameDecoder } from './frame-decoder.js';
import type { LogLimits } from './log-limiter.js';
import type { OutputSettings } from './output-stream.js';

/** What a {@link HostSession} reads: its timers, admission limits and the `welcome` limits. Times in ms, sizes in bytes. */
export interface SessionOptions extends WelcomeOptions, LogLimits {
  /** Time from upgrade to `hello` (`helloTimeoutMs`). */
  helloTimeoutMs: number;
  /** How long a stopped call waits for partial output before settling 130 (`cancelGraceMs`). */
  cancelGraceMs: number;
  /** Deadline of a call that names none (`deadlineMs`). */
  deadlineMs: number;
  maxBufferedBytesPerHost: number;
  /** Wrong-shape frames before close 1008. */
  maxBadFrames: number;
  /** Live output on protocol 2 connections: `welcome.output` and the capture cap of a streamed call. */
  output: OutputSettings;
  /** Mints wire call ids (a test seam, `ServerSeams.newCallId`). */
  newCallId: () => string;
  /** Counts of session events for `/metrics` (one per server). */
  counters: SessionCounters;
  /** Decodes frames, large ones off the event loop (one per server). */
  decoder: FrameDecoder;
  logger: Logger;
}

/** Dependencies of a {@link HostSession}. */
export interface HostSessionDeps {
  /** The upgraded socket, OPEN. */
  ws: WebSocket;
  identity: HostIdentity;
  options: SessionOptions;
  router: Pick<Router, 'bind' | 'advertise' | 'unbind' | 'claim'>;
  /** Loopback dev mode: true for names a tokenless host may not claim (configured host identities). */
  reserved?: (name: string) => boolean;
  /** The socket `ws` writes to (from the upgrade); when given, frames sent in one tick leave in one syscall. */
  socket?: Corkable;
  /** The peer's address (`req.socket.remoteAddress`), for logs. */
  remote?: string | undefined;
}
