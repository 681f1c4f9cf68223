/**
 * The envelope (DESIGN §3): the one text the model reads for an invocation.
 *
 * ```text
 * Exit code: N\n
 * <stdout>
 * [only when stderr is non-empty: "\n" if the text so far does not end with one]
 * --- stderr ---\n
 * <stderr>
 * ```
 * `isError` is `exitCode !== 0`.
 */
import type { Projection } from './projection.js';

/** The text the model reads and whether the call failed. */
export interface Envelope {
  text: string;
  /** `exitCode !== 0`. */
  isError: boolean;
}

// Lossy on purpose: the model reads text; invalid sequences become U+FFFD. The full bytes stay in the capture.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Build the envelope of a projection (see the module comment for the exact format). */
export function envelope(projection: Projection): Envelope {
  let text = `Exit code: ${projection.exitCode}\n${decoder.decode(projection.stdout)}`;
  if (projection.stderr.length > 0) {
    if (!text.endsWith('\n')) text += '\n';
    text += `--- stderr ---\n${decoder.decode(projection.stderr)}`;
  }
  return { text, isError: projection.exitCode !== 0 };
}
