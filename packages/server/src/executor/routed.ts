/**
 * What the executor makes of the router's answer (DESIGN §3, step 5): a capture is taken as it is;
 * "not mine" (`undefined`) goes to the fallback (local tools), then becomes capture 127; a router or
 * fallback that throws, or answers with something that is not a capture, becomes capture 70.
 */
import { type Capture, failureCapture } from '@toolwire/protocol';
import type { RoutedCall, RoutedCapture } from '../seam.js';
import { message, quote } from './reason-text.js';
import type { Fallback } from './request.js';

/** Whether `value` is a well-formed capture (`stdout`/`stderr` bytes, an integer `exitCode`). */
export function isCapture(value: unknown): value is Capture {
  const c = value as Partial<Capture> | null;
  return typeof c === 'object' && c !== null && c.stdout instanceof Uint8Array && c.stderr instanceof Uint8Array && Number.isInteger(c.exitCode);
}

/**
 * After the router answered `routed` ("not mine" or malformed): try `fallback`, then 127
 * (`not_found`); a fallback that throws, or a malformed capture, becomes 70 (`host_error`). Never rejects.
 */
export async function settleRouted(call: RoutedCall, routed: RoutedCapture | undefined, fallback: Fallback | undefined): Promise<Capture> {
  let capture = routed;
  if (capture === undefined && fallback) {
    try {
      capture = await fallback(call);
    } catch (error) {
      return failureCapture('host_error', `local tool failed: ${message(error)}`);
    }
  }
  if (capture === undefined) return failureCapture('not_found', `no such tool ${quote(call.name)}`);
  if (!isCapture(capture)) return failureCapture('host_error', 'the router returned a malformed capture');
  return capture;
}
