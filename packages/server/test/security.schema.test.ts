/**
 * Issue 5 §4 — advertised schemas are untrusted: strict ajv, no remote `$ref`, `$id` isolation,
 * bounded size/depth, `pattern` on a linear-time engine, common formats accepted, compile errors
 * reject only that tool within a bounded time, and ajv's caches do not grow without bound.
 */
import { Defaults } from '@toolwire/protocol';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../src/registry/registry.js';
import { COMPILES_PER_GENERATION, MAX_CACHED_SCHEMAS, MAX_PATTERN_LENGTH, checkInput, compileInputSchema, schemaCacheStats } from '../src/registry/schema-cache.js';

const limits = {
  naming: 'qualified' as const,
  maxToolsPerHost: 256,
  maxSchemaBytes: Defaults.maxSchemaBytes,
  maxSchemaDepth: Defaults.maxSchemaDepth,
  maxDescriptionChars: Defaults.maxDescriptionChars,
};

/** Advertise `schemas` (one tool each, named t0, t1, …) and return the `advertised` answer. */
function advertise(schemas: unknown[], host = 'alpha', registry = new ToolRegistry(limits)) {
  return registry.replace(
    host,
    schemas.map((inputSchema, i) => ({ name: `t${i}`, inputSchema })),
  ).advertised;
}

function reasonOf(schema: unknown): string | undefined {
  const { rejected } = advertise([schema]);
  return rejected[0]?.reason;
}

/** Time `fn`, ms. */
function timed<T>(fn: () => T): { value: T; ms: number } {
  const began = performance.now();
  const value = fn();
  return { value, ms: performance.now() - began };
}

describe('strict ajv', () => {
  it('accepts a typical MCP tool schema with $schema, formats and patterns', () => {
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        url: { type: 'string', format: 'uri' },
        homepage: { type: 'string', format: 'url' },
        email: { type: 'string', format: 'email' },
        when: { type: 'string', format: 'date-time' },
        id: { type: 'string', format: 'uuid' },
        slug: { type: 'string', pattern: '^[a-z0-9-]+$' },
      },
      required: ['url'],
      additionalProperties: false,
    };
    expect(advertise([schema]).rejected).toEqual([]);
    const compiled = compileInputSchema(schema);
    if (!compiled.ok) throw new Error(compiled.reason);
    expect(
      checkInput(compiled.validate, { url: 'https://example.com/x', homepage: 'https://example.com', slug: 'a-b', when: '2024-01-02T03:04:05Z' }),
    ).toBeUndefined();
    expect(checkInput(compiled.validate, { url: 'not a uri' })).toMatch(/must match format "uri"/);
    expect(checkInput(compiled.validate, { url: 'x:y', homepage: 'javascript:alert(1)' })).toMatch(/format "url"/);
    expect(checkInput(compiled.validate, { url: 'x:y', slug: 'Not A Slug' })).toMatch(/must match pattern/);
  });

  it('rejects only the tool whose schema does not compile, with the reason, and accepts the rest', () => {
    const { accepted, rejected } = advertise([
      { type: 'object' },
      { type: 'object', frobnicate: true },
      { type: 'object', properties: { a: { type: 'strin' } } },
      { type: 'object', properties: { a: { type: 'string', format: 'no-such-format' } } },
      { type: 'object', properties: { n: { type: 'number' } } },
    ]);
    expect(accepted.map((a) => a.name)).toEqual(['t0', 't4']);
    expect(rejected.map((r) => r.name)).toEqual(['t1', 't2', 't3']);
    expect(rejected[0]!.reason).toMatch(/does not compile: strict mode: unknown keyword: "frobnicate"/);
    expect(rejected[1]!.reason).toMatch(/does not compile: schema is invalid/);
    expect(rejected[2]!.reason).toMatch(/unknown format "no-such-format"/);
  });

  it('treats keys named after Object.prototype members as unknown keywords (strict), not as known ones', () => {
    for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const schema = JSON.parse(`{"type":"object","${key}":{"polluted":true}}`) as object;
      expect(reasonOf(schema)).toMatch(new RegExp(`strict mode: unknown keyword: "${key}"`));
    }
    // As property names they are ordinary data.
    expect(reasonOf(JSON.parse('{"type":"object","properties":{"constructor":{"type":"string"},"toString":{"type":"string"}}}'))).toBeUndefined();
  });

  it('never loads a remote $ref: the tool is rejected with the unresolved reference', () => {
    for (const ref of ['https://evil.example/schema.json', 'http://127.0.0.1:1/x.json', 'file:///etc/passwd', 'other.json#/a']) {
      expect(reasonOf({ type: 'object', properties: { a: { $ref: ref } } })).toMatch(/can't resolve reference/);
    }
  });

  it('keeps an $id inside one schema invisible to every other schema', () => {
    const before = schemaCacheStats().ajvRefs;
    const owner = { type: 'object', definitions: { s: { $id: 'http://shared.example/s', type: 'string' } }, properties: { a: { $ref: 'http://shared.example/s' } } };
    expect(advertise([owner]).rejected).toEqual([]);
    expect(schemaCacheStats().ajvRefs).toBe(before);
    // Another host cannot borrow it …
    expect(reasonOf({ type: 'object', properties: { b: { $ref: 'http://shared.example/s' } } })).toMatch(/can't resolve reference/);
    // … nor collide with it: a different schema under the same $id still compiles.
    const other = { type: 'object', definitions: { s: { $id: 'http://shared.example/s', type: 'number' } }, properties: { a: { $ref: 'http://shared.example/s' } } };
    expect(advertise([other], 'beta').rejected).toEqual([]);
    const compiled = compileInputSchema(other);
    expect(compiled.ok && checkInput(compiled.validate, { a: 1 })).toBeUndefined();
    // A schema that claims the meta-schema's $id cannot displace it.
    expect(advertise([{ $id: 'http://json-schema.org/draft-07/schema', type: 'object' }]).rejected).toEqual([]);
    expect(advertise([{ type: 'object', properties: { x: { type: 'integer' } } }]).rejected).toEqual([]);
    expect(reasonOf({ type: 'object', properties: { x: { type: 'nope' } } })).toMatch(/schema is invalid/); // meta-schema still in force
  });

  it('bounds schema size and depth before compiling', () => {
    expect(reasonOf({ type: 'object', description: 'x'.repeat(Defaults.maxSchemaBytes) })).toMatch(/over the limit of 65536/);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { x: deep } };
    expect(reasonOf(deep)).toMatch(/nested deeper than 32 levels/);
  });
});

describe('pattern keywords cannot hang the server', () => {
  const evil = 'a'.repeat(200_000) + '!';

  it('runs pattern on a linear-time engine: a catastrophic-backtracking pattern answers at once', () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(x+x+)+y$': { type: 'string' } } };
    expect(advertise([schema]).rejected).toEqual([]);
    const compiled = compileInputSchema(schema);
    if (!compiled.ok) throw new Error(compiled.reason);
    const { value, ms } = timed(() => checkInput(compiled.validate, { s: evil, ['x'.repeat(50_000)]: 'k' }));
    expect(value).toMatch(/must match pattern/);
    expect(ms).toBeLessThan(2_000); // the native engine would take longer than the age of the universe
    expect(checkInput(compiled.validate, { s: 'aaaa' })).toBeUndefined();
  });

  it('rejects a pattern the safe engine cannot run (look-around, back-reference) with the reason', () => {
    expect(reasonOf({ type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a$' } } })).toMatch(/not supported by the linear-time regex engine/);
    expect(reasonOf({ type: 'object', properties: { s: { type: 'string', pattern: '(a)\\1' } } })).toMatch(/not supported by the linear-time regex engine/);
  });

  it(`rejects a pattern longer than ${MAX_PATTERN_LENGTH} characters`, () => {
    expect(reasonOf({ type: 'object', properties: { s: { type: 'string', pattern: 'a'.repeat(MAX_PATTERN_LENGTH + 1) } } })).toMatch(/pattern is longer than 1024/);
    expect(reasonOf({ type: 'object', properties: { s: { type: 'string', pattern: 'a'.repeat(MAX_PATTERN_LENGTH) } } })).toBeUndefined();
  });

  it('checks every format in linear time, url included', () => {
    const formats = ['uri', 'uri-reference', 'uri-template', 'url', 'email', 'hostname', 'date-time', 'ipv6', 'regex', 'json-pointer', 'duration'];
    const schema = { type: 'object', properties: Object.fromEntries(formats.map((f) => [f, { type: 'string', format: f }])) };
    const compiled = compileInputSchema(schema);
    if (!compiled.ok) throw new Error(compiled.reason);
    const inputs = ['http://' + ':'.repeat(200_000), 'a@' + 'a.'.repeat(100_000) + '-', '{' + 'a,'.repeat(100_000), 'P' + '1Y'.repeat(100_000) + 'x'];
    for (const s of inputs) {
      const { ms } = timed(() => checkInput(compiled.validate, Object.fromEntries(formats.map((f) => [f, s]))));
      expect(ms).toBeLessThan(1_000);
    }
  });
});

describe('compiling is bounded', () => {
  it('compiles hostile schemas within the size limit in bounded time', () => {
    // A chain of definitions, each referring to the next twice: 2^40 paths if inlined.
    const definitions: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) definitions[`d${i}`] = { anyOf: [{ $ref: `#/definitions/d${i + 1}` }, { allOf: [{ $ref: `#/definitions/d${i + 1}` }] }] };
    definitions.d40 = { type: 'string', pattern: '^(a|b|c)+$' };
    const chain = { type: 'object', definitions, properties: { x: { $ref: '#/definitions/d0' } } };
    // Many patterns, each as large as allowed, filling the size limit.
    const many = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`p${i}`, { type: 'string', pattern: `(${'(a|b)'.repeat(180)})${i}` }])),
    };
    // Wide allOf of enums near the byte limit.
    const wide = { type: 'object', allOf: Array.from({ length: 900 }, (_, i) => ({ properties: { [`k${i}`]: { enum: [i, `${i}`, null] } } })) };
    for (const schema of [chain, many, wide]) {
      expect(JSON.stringify(schema).length).toBeLessThanOrEqual(Defaults.maxSchemaBytes);
      const { value, ms } = timed(() => advertise([schema]));
      expect(ms).toBeLessThan(3_000);
      expect(value.accepted.length + value.rejected.length).toBe(1);
    }
    const compiled = compileInputSchema(chain);
    if (!compiled.ok) throw new Error(compiled.reason);
    const { ms } = timed(() => checkInput(compiled.validate, { x: 'ab'.repeat(100_000) }));
    expect(ms).toBeLessThan(1_000);
  });

  it('does not let ajv grow without bound as hosts re-advertise new schemas', () => {
    const start = schemaCacheStats();
    for (let i = 0; i < COMPILES_PER_GENERATION * 3; i++) {
      advertise([{ type: 'object', definitions: { d: { $id: `http://x.example/${i}` } }, properties: { [`p${i}`]: { type: 'string', pattern: `^v${i}$` } } }]);
    }
    const end = schemaCacheStats();
    expect(end.generation).toBeGreaterThanOrEqual(start.generation + 2);
    expect(end.cachedTexts).toBeLessThanOrEqual(MAX_CACHED_SCHEMAS);
    expect(end.ajvRefs).toBeLessThanOrEqual(start.ajvRefs);
  });

  it('compiles an identical schema text once, whichever object carries it', () => {
    const text = JSON.stringify({ type: 'object', properties: { q: { type: 'string', minLength: 3 } } });
    const a = compileInputSchema(JSON.parse(text) as object);
    const b = compileInputSchema(JSON.parse(text) as object);
    expect(a.ok && b.ok && a.validate === b.validate).toBe(true);
  });
});
