/**
 * Accept-only checks of the two frames sent once per call: the host's `result` (checked by the
 * server) and the server's `call` (checked by the host). Each accepts only a common shape of its
 * frame, with exactly the keys, types and bounds its JSON Schema (`schemas.ts`) requires, so what it
 * accepts the generated validator accepts too (a property test holds them to that). Anything else —
 * an encoding, content blocks, trace context, an unknown key, a wrong type — returns false and goes
 * to the generated validator unchanged, so every refusal and its reason stay ajv's.
 */
import { FailureKind } from './codes.js';

/** `id`: 1–128 characters (UTF-16 units: at most as many code points as ajv counts). */
function isWireId(value: unknown): boolean {
  return typeof value === 'string' && value.length >= 1 && value.length <= 128;
}

/** An integer from `min` to `max` (JSON.parse gives no NaN or infinity). */
function isIntegerIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** `failure`: one of {@link FailureKind}'s keys (own keys only, so not `toString` or `__proto__`). */
function isFailure(value: unknown): boolean {
  return typeof value === 'string' && Object.hasOwn(FailureKind, value);
}

/** `callId`: `CALL_ID_PATTERN` (`[A-Za-z0-9._-]{1,128}`), by character codes (cheaper than the regex per frame). */
function isCallId(value: unknown): boolean {
  if (typeof value !== 'string' || value.length < 1 || value.length > 128) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    // 0-9 A-Z a-z . _ -
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 46 || c === 95 || c === 45)) return false;
  }
  return true;
}

/** `result.streamed`: exactly `stdout`, `stderr`, `chunks`, each a count. */
function isStreamed(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const s = value as Record<string, unknown>;
  let keys = 0;
  for (const key in s) {
    if (key !== 'stdout' && key !== 'stderr' && key !== 'chunks') return false;
    keys += 1;
  }
  const max = Number.MAX_SAFE_INTEGER;
  return keys === 3 && isIntegerIn(s.stdout, 0, max) && isIntegerIn(s.stderr, 0, max) && isIntegerIn(s.chunks, 0, max);
}

/**
 * True when `value` (a parsed JSON object) is a `result` of text streams: `type`, `id`, `stdout`,
 * `stderr`, `exitCode`, and optionally `failure` and `streamed`, nothing else. False says nothing
 * about validity: the generated validator decides.
 */
export function isPlainResult(value: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in value) {
    switch (key) {
      case 'type':
      case 'id':
      case 'stdout':
      case 'stderr':
      case 'exitCode':
        keys += 1;
        break;
      case 'failure':
        if (!isFailure(value.failure)) return false;
        break;
      case 'streamed':
        if (!isStreamed(value.streamed)) return false;
        break;
      default:
        return false;
    }
  }
  return (
    keys === 5 &&
    value.type === 'result' &&
    isWireId(value.id) &&
    typeof value.stdout === 'string' &&
    typeof value.stderr === 'string' &&
    isIntegerIn(value.exitCode, 0, 255)
  );
}

/**
 * True when `value` (a parsed JSON object) is a `call` without trace context: `type`, `id`, `tool`,
 * `input`, `workspace`, `agent`, `deadlineMs`, and optionally `callId`, nothing else. False says
 * nothing about validity: the generated validator decides.
 */
export function isPlainCall(value: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in value) {
    switch (key) {
      case 'type':
      case 'id':
      case 'tool':
      case 'input':
      case 'workspace':
      case 'agent':
      case 'deadlineMs':
        keys += 1;
        break;
      case 'callId':
        if (!isCallId(value.callId)) return false;
        break;
      default:
        return false;
    }
  }
  const tool = value.tool;
  return (
    keys === 7 &&
    value.type === 'call' &&
    isWireId(value.id) &&
    typeof tool === 'string' &&
    tool.length >= 1 &&
    tool.length <= 64 &&
    typeof value.workspace === 'string' &&
    typeof value.agent === 'string' &&
    isIntegerIn(value.deadlineMs, 0, Infinity)
  );
}
