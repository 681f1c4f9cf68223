/**
 * The codec: one frame in, a typed message or one coded {@link WireError} out — never a throw.
 * The validators are ajv's (strict mode, all errors), compiled ahead of time from `schemas.ts` into
 * `validators.generated.ts` (`pnpm --filter @toolwire/protocol generate`), so no process loads ajv's
 * compiler for the wire format.
 */
import type { ErrorObject } from 'ajv';
import { CloseCode } from './codes.js';
import { isPlainCall, isPlainResult } from './hot-frames.js';
import type { HostMessage, ServerMessage, ToolSpec } from './messages.js';
import * as generated from './validators.generated.js';

/**
 * Why a frame was refused.
 * - `fatal: true` — the connection cannot go on; close it with `closeCode` and settle every pending
 *   call with exit code 76 (DESIGN §6).
 * - `fatal: false` — parsable JSON of the wrong shape; the session is kept. When the frame names a
 *   call (`id`), that call settles 76.
 */
export interface WireError {
  fatal: boolean;
  /** RFC 6455 close code to use when fatal (1002, 1003, 1007, 1009). */
  closeCode: number;
  /** Human-readable reason, e.g. `result: must have required property 'exitCode'`. */
  reason: string;
  /** The call id the frame named, when it named one. */
  id?: string;
  /** The message type of a wrong-shape frame (a known `type` whose fields do not match its schema). */
  type?: string;
}

/** Outcome of decoding one frame. */
export type Decoded<M> = { ok: true; message: M } | { ok: false; error: WireError };

/** A generated validator: true when `data` matches; otherwise `errors` holds ajv's error objects. */
interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** The generated validators whose export name starts with `prefix`, keyed by message `type`. */
function validators(prefix: string): Map<string, Validator> {
  const entries = Object.entries(generated as Record<string, Validator>).filter(([name]) => name.startsWith(prefix));
  return new Map(entries.map(([name, validate]) => [name.slice(prefix.length), validate]));
}

const hostValidators = validators('host_');
const serverValidators = validators('server_');
const toolSpecValidator = generated.toolSpec as Validator;

/** The frame sent once per call in one direction, and its accept-only check (`hot-frames.ts`), tried before ajv. */
interface HotFrame {
  type: string;
  accept: (value: Record<string, unknown>) => boolean;
}

const hostHot: HotFrame = { type: 'result', accept: isPlainResult };
const serverHot: HotFrame = { type: 'call', accept: isPlainCall };

/** Most ajv errors rendered into one reason line; the rest are counted. */
const MAX_REPORTED_ERRORS = 5;

/** Longest unknown key quoted in a reason, characters (the key is the peer's text). */
const MAX_QUOTED_KEY_CHARS = 64;

/**
 * Render ajv errors as one line, e.g. `/exitCode must be integer; / must have required property 'stderr'`.
 * An unknown key is named: `/ must NOT have additional properties ("extra")`.
 */
export function formatAjvErrors(errors: ErrorObject[] | null | undefined): string {
  if (!errors || errors.length === 0) return 'invalid';
  const shown = errors.slice(0, MAX_REPORTED_ERRORS).map((e) => {
    const line = `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`;
    const key: unknown = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: unknown }).additionalProperty : undefined;
    return typeof key === 'string' ? `${line} (${JSON.stringify(key.slice(0, MAX_QUOTED_KEY_CHARS))})` : line;
  });
  if (errors.length > MAX_REPORTED_ERRORS) shown.push(`and ${errors.length - MAX_REPORTED_ERRORS} more`);
  return shown.join('; ');
}

/**
 * `type` of an unknown message for the reason line, at most 64 characters. Objects and arrays are
 * only named: stringifying a hostile, deeply nested value would overflow the stack (a throw).
 */
function describeType(type: unknown): string {
  if (typeof type === 'object' && type !== null) return Array.isArray(type) ? '(an array)' : '(an object)';
  return String(JSON.stringify(typeof type === 'string' ? type.slice(0, 64) : type)).slice(0, 64);
}

function decode<M>(validators: Map<string, Validator>, hot: HotFrame, data: string | Buffer, isBinary: boolean): Decoded<M> {
  if (isBinary) {
    return { ok: false, error: { fatal: true, closeCode: CloseCode.UNSUPPORTED_DATA, reason: 'binary frame' } };
  }
  let value: unknown;
  try {
    value = JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch {
    return { ok: false, error: { fatal: true, closeCode: CloseCode.PROTOCOL_ERROR, reason: 'frame is not JSON' } };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: { fatal: false, closeCode: CloseCode.PROTOCOL_ERROR, reason: 'frame is not a JSON object' } };
  }
  const record = value as Record<string, unknown>;
  const type = record.type;
  if (type === hot.type && hot.accept(record)) return { ok: true, message: value as M };
  const named = typeof record.id === 'string' && record.id.length > 0 ? record.id : undefined;
  const validate = typeof type === 'string' ? validators.get(type) : undefined;
  if (typeof type !== 'string' || !validate) {
    const error: WireError = { fatal: false, closeCode: CloseCode.PROTOCOL_ERROR, reason: `unknown message type ${describeType(type)}` };
    if (named) error.id = named;
    return { ok: false, error };
  }
  let valid: boolean;
  try {
    valid = validate(value);
  } catch {
    // A validator should not throw; if one does (e.g. an engine limit on a pathological frame),
    // the frame is refused like garbage — the codec never throws.
    return { ok: false, error: { fatal: true, closeCode: CloseCode.PROTOCOL_ERROR, reason: `${type}: frame could not be checked` } };
  }
  if (!valid) {
    const error: WireError = { fatal: false, closeCode: CloseCode.PROTOCOL_ERROR, reason: `${type}: ${formatAjvErrors(validate.errors)}`, type };
    if (named) error.id = named;
    return { ok: false, error };
  }
  return { ok: true, message: value as M };
}

/** Decode a frame a host sent (server side). `data` as ws delivers it; `isBinary` from the ws event. */
export function decodeHostMessage(data: string | Buffer, isBinary = false): Decoded<HostMessage> {
  return decode<HostMessage>(hostValidators, hostHot, data, isBinary);
}

/** Decode a frame the server sent (tool-host side). */
export function decodeServerMessage(data: string | Buffer, isBinary = false): Decoded<ServerMessage> {
  return decode<ServerMessage>(serverValidators, serverHot, data, isBinary);
}

/** Encode any message as one JSON text frame. */
export function encodeMessage(message: HostMessage | ServerMessage): string {
  return JSON.stringify(message);
}

/** Check one advertised tool's shape; returns the reason it is refused, or `undefined` when well-formed. */
export function checkToolSpec(value: unknown): string | undefined {
  return toolSpecValidator(value) ? undefined : formatAjvErrors(toolSpecValidator.errors);
}

/** Type guard form of {@link checkToolSpec}. */
export function isToolSpec(value: unknown): value is ToolSpec {
  return toolSpecValidator(value);
}
