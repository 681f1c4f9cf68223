/**
 * Property (fast-check): the codec turns any frame — random text, random bytes, random JSON, hostile
 * nesting, near-miss messages — into a typed message or one coded error, and never throws.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeHostMessage, decodeServerMessage, hostMessageSchemas, serverMessageSchemas } from '../src/index.js';

const HOST_TYPES = new Set(Object.keys(hostMessageSchemas));
const SERVER_TYPES = new Set(Object.keys(serverMessageSchemas));
const CLOSE_CODES = new Set([1002, 1003, 1007, 1009]);

const deep = fc
  .tuple(fc.integer({ min: 1, max: 30_000 }), fc.constantFrom('[', '{"a":'), fc.constantFrom('type', 'id', 'stdout', 'tools', 'input'))
  .map(([depth, open, key]) => {
    const close = open === '[' ? ']' : '}';
    return `{"type":"result","${key}":${open.repeat(depth)}${open === '[' ? '' : '0'}${close.repeat(depth)}}`;
  });

/** Messages that are almost right: each field replaced by any JSON value, or dropped, or one added. */
const nearMiss = fc
  .record(
    {
      type: fc.oneof(fc.constantFrom('hello', 'advertise', 'result', 'welcome', 'advertised', 'call', 'cancel', '__proto__', 'constructor'), fc.jsonValue()),
      id: fc.oneof(fc.constantFrom('0', '', 'x'.repeat(129), '__proto__'), fc.string(), fc.jsonValue()),
      stdout: fc.oneof(fc.string(), fc.jsonValue()),
      stderr: fc.oneof(fc.string(), fc.jsonValue()),
      exitCode: fc.oneof(fc.integer({ min: -1, max: 256 }), fc.double(), fc.jsonValue()),
      protocol: fc.oneof(fc.integer(), fc.jsonValue()),
      tools: fc.oneof(fc.array(fc.jsonValue(), { maxLength: 4 }), fc.jsonValue()),
      stdoutEncoding: fc.oneof(fc.constant('base64'), fc.jsonValue()),
      failure: fc.oneof(fc.constantFrom('deadline', 'protocol', 'nope'), fc.jsonValue()),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  )
  .map((m) => JSON.stringify(m));

const frame = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary', maxLength: 300 }), weight: 2 },
  { arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)), weight: 2 },
  { arbitrary: nearMiss, weight: 4 },
  { arbitrary: deep, weight: 1 },
);
const bytes = fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b));

function checkOutcome(outcome: ReturnType<typeof decodeHostMessage> | ReturnType<typeof decodeServerMessage>, types: Set<string>): void {
  if (outcome.ok) {
    expect(types.has(outcome.message.type)).toBe(true);
    return;
  }
  const { error } = outcome;
  expect(typeof error.fatal).toBe('boolean');
  expect(CLOSE_CODES.has(error.closeCode)).toBe(true);
  expect(typeof error.reason).toBe('string');
  expect(error.reason.length).toBeGreaterThan(0);
  expect(error.reason.length).toBeLessThan(2_000);
  if (error.id !== undefined) expect(typeof error.id).toBe('string');
}

describe('codec properties', () => {
  it('decodes any text frame (as string or bytes) to a known message or one coded error, never a throw', () => {
    fc.assert(
      fc.property(frame, fc.boolean(), (text, asBuffer) => {
        const data = asBuffer ? Buffer.from(text, 'utf8') : text;
        checkOutcome(decodeHostMessage(data, false), HOST_TYPES);
        checkOutcome(decodeServerMessage(data, false), SERVER_TYPES);
      }),
      { numRuns: 4_000 },
    );
  });

  it('decodes any bytes, text or binary, without throwing; binary is always fatal 1003', () => {
    fc.assert(
      fc.property(bytes, fc.boolean(), (data, isBinary) => {
        const host = decodeHostMessage(data, isBinary);
        const server = decodeServerMessage(data, isBinary);
        checkOutcome(host, HOST_TYPES);
        checkOutcome(server, SERVER_TYPES);
        if (isBinary) {
          expect(host).toMatchObject({ ok: false, error: { fatal: true, closeCode: 1003 } });
          expect(server).toMatchObject({ ok: false, error: { fatal: true, closeCode: 1003 } });
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('a wrong-shape frame names the call only when it carries a non-empty string id', () => {
    fc.assert(
      fc.property(nearMiss, (text) => {
        const outcome = decodeHostMessage(text);
        if (outcome.ok || outcome.error.fatal) return;
        const value = JSON.parse(text) as { id?: unknown };
        const named = typeof value === 'object' && value !== null && typeof value.id === 'string' && value.id.length > 0;
        expect(outcome.error.id).toBe(named ? value.id : undefined);
      }),
      { numRuns: 2_000 },
    );
  });
});
