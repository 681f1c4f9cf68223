/**
 * Bounded projection (DESIGN §3): what of a capture the model reads. stdout and stderr are capped
 * separately, each keeping its first `head` and last `tail` bytes with one marker line between
 * (protocol `headTail`), e.g.
 * `[... stdout truncated: 1048576 bytes / 20000 lines total; showing the first 16384 and last 16384 bytes ...]`.
 */
import { type Capture, headTail } from '@toolwire/protocol';

/** The bounded streams of one capture. */
export interface Projection {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

/**
 * Project `capture` with `head`/`tail` bytes kept per stream (defaults come from
 * `ToolwireServerOptions.projectionHeadBytes`/`projectionTailBytes`, 16384 each). A stream of at most
 * `head + tail` bytes is kept whole. The full capture is untouched (the disk record keeps it).
 */
export function project(capture: Capture, head: number, tail: number): Projection {
  return {
    stdout: headTail(capture.stdout, head, tail, 'stdout'),
    stderr: headTail(capture.stderr, head, tail, 'stderr'),
    exitCode: capture.exitCode,
  };
}
