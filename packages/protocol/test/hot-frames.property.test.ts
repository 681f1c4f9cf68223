/**
 * Property (fast-check): the accept-only checks of the hot frames (`hot-frames.ts`) never accept a
 * frame the generated ajv validator refuses, and do accept the shapes a host and a server send per call.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeHostMessage, decodeServerMessage, FailureKind } from '../src/index.js';
import { isPlainCall, isPlainResult } from '../src/hot-frames.js';
import * as generated from '../src/validators.generated.js';

const ajvResult = generated.host_result as (value: unknown) => boolean;
const ajvCall = generated.server_call as (value: unknown) => boolean;

const failures = Object.keys(FailureKind);
const count = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

/** Any JSON value, or one of the near misses of a field (bounds ±1, other types, hostile keys). */
const anyValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(
    '',
    'x'.repeat(64),
    'x'.repeat(65),
    'x'.repeat(128),
    'x'.repeat(129),
    '__proto__',
    'toString',
    'constructor',
    -1,
    0,
    255,
    256,
    1.5,
    -0,
    1e300,
    'base64',
    null,
  ),
  fc.string({ unit: 'grapheme', maxLength: 140 }),
);

const validStreamed = fc.record({ stdout: count, stderr: count, chunks: count });

/**
 * `valid` with one key dropped, or set to anything (a bound ±1, another type, a hostile value): a
 * near miss of a frame the check accepts, where a missing check would show.
 */
function nearMiss<T extends Record<string, unknown>>(
  valid: fc.Arbitrary<T>,
  keys: string[],
  value: fc.Arbitrary<unknown> = nearValue,
): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(valid, fc.constantFrom(...keys, 'extra', '__proto__'), fc.option(value, { nil: undefined, freq: 2 })).map(([frame, key, replaced]) => {
    const copy: Record<string, unknown> = { ...frame };
    if (replaced === undefined) delete copy[key];
    else Object.defineProperty(copy, key, { value: replaced, enumerable: true, writable: true, configurable: true });
    return copy;
  });
}

/** Values at the bounds of the frames' fields, and of other types. */
const bound = fc.constantFrom('', ' ', 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(128), 'x'.repeat(129), -1, 0, 255, 256, 1.5, 'base64', null, {}, []);

const nearValue = fc.oneof(
  { arbitrary: bound, weight: 4 },
  anyValue,
  fc.integer({ min: -2, max: 257 }),
  fc.string({ maxLength: 130 }),
  fc.constantFrom(...failures),
  validStreamed,
  nearMiss(validStreamed, ['stdout', 'stderr', 'chunks'], fc.oneof(bound, count)),
);

/** Results as a host sends them (text streams, optional failure and streamed). */
const plainResult = fc.record(
  {
    type: fc.constant('result'),
    id: fc.string({ minLength: 1, maxLength: 128 }),
    stdout: fc.string(),
    stderr: fc.string(),
    exitCode: fc.integer({ min: 0, max: 255 }),
    failure: fc.constantFrom(...failures),
    streamed: validStreamed,
  },
  { requiredKeys: ['type', 'id', 'stdout', 'stderr', 'exitCode'] },
);

const resultKeys = ['type', 'id', 'stdout', 'stderr', 'stdoutEncoding', 'stderrEncoding', 'exitCode', 'failure', 'streamed', 'content', 'structured'];
const nearResult = fc.oneof(
  nearMiss(plainResult, resultKeys),
  fc.tuple(plainResult, nearMiss(validStreamed, ['stdout', 'stderr', 'chunks'], fc.oneof(bound, count))).map(([frame, streamed]) => ({ ...frame, streamed })),
);

const callId = fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/);

/** Calls as a server sends them (no trace context). */
const plainCall = fc.record(
  {
    type: fc.constant('call'),
    id: fc.string({ minLength: 1, maxLength: 128 }),
    tool: fc.string({ minLength: 1, maxLength: 64 }),
    input: fc.jsonValue(),
    workspace: fc.string(),
    agent: fc.string(),
    deadlineMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    callId,
  },
  { requiredKeys: ['type', 'id', 'tool', 'input', 'workspace', 'agent', 'deadlineMs'] },
);

const callKeys = ['type', 'id', 'tool', 'input', 'workspace', 'agent', 'deadlineMs', 'callId', 'traceparent', 'tracestate'];
const nearCall = nearMiss(plainCall, callKeys);

/** As the codec sees a frame: parsed from its JSON text (own `__proto__` keys included). */
function parsed(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

describe('hot-frame checks', () => {
  it('never accept a result the ajv validator refuses', () => {
    fc.assert(
      fc.property(fc.oneof(plainResult, nearResult), (value) => {
        const frame = parsed(value);
        if (isPlainResult(frame)) expect(ajvResult(frame)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('never accept a call the ajv validator refuses', () => {
    fc.assert(
      fc.property(fc.oneof(plainCall, nearCall), (value) => {
        const frame = parsed(value);
        if (isPlainCall(frame)) expect(ajvCall(frame)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('accept every result of text streams, with or without failure and streamed', () => {
    fc.assert(
      fc.property(plainResult, (value) => {
        expect(isPlainResult(parsed(value))).toBe(true);
      }),
    );
  });

  it('accept every call without trace context, with or without callId', () => {
    fc.assert(
      fc.property(plainCall, (value) => {
        expect(isPlainCall(parsed(value))).toBe(true);
      }),
    );
  });

  it('leave a result with an own __proto__ key, or an encoding, to ajv', () => {
    const base = '"type":"result","id":"a","stdout":"","stderr":"","exitCode":0';
    expect(isPlainResult(JSON.parse(`{${base},"__proto__":{}}`) as Record<string, unknown>)).toBe(false);
    expect(isPlainResult(JSON.parse(`{${base},"stdoutEncoding":"base64"}`) as Record<string, unknown>)).toBe(false);
    const refused = decodeHostMessage(`{${base},"__proto__":{}}`);
    expect(refused.ok).toBe(false);
  });

  it('decode the same message and the same refusal as before for hot and near-hot frames', () => {
    fc.assert(
      fc.property(fc.oneof(plainResult, nearResult), (value) => {
        const text = JSON.stringify(value);
        const outcome = decodeHostMessage(text);
        const frame = parsed(value);
        expect(outcome.ok).toBe(ajvResult(frame));
        if (outcome.ok) expect(outcome.message).toEqual(frame);
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(fc.oneof(plainCall, nearCall), (value) => {
        const outcome = decodeServerMessage(JSON.stringify(value));
        const frame = parsed(value);
        expect(outcome.ok).toBe(ajvCall(frame));
        if (outcome.ok) expect(outcome.message).toEqual(frame);
      }),
      { numRuns: 2_000 },
    );
  });
});
