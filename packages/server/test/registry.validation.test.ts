import { Defaults } from '@toolwire/protocol';
import { describe, expect, it } from 'vitest';
import { ToolRegistry, type RegistryOptions, validateTool } from '../src/registry/registry.js';
import { jsonDepth } from '../src/registry/validate-tool.js';

const limits = { maxSchemaBytes: 1024, maxSchemaDepth: 8, maxDescriptionChars: 100 };
const tool = (name: string, extra: Record<string, unknown> = {}) => ({ name, inputSchema: { type: 'object' }, ...extra });

function registry(overrides: Partial<RegistryOptions> = {}): ToolRegistry {
  return new ToolRegistry({
    naming: 'qualified',
    maxToolsPerHost: 4,
    maxSchemaBytes: 1024,
    maxSchemaDepth: 8,
    maxDescriptionChars: Defaults.maxDescriptionChars,
    ...overrides,
  });
}

function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'object' };
  for (let i = 1; i < depth; i++) schema = { type: 'object', properties: { x: schema } };
  return schema;
}

describe('validateTool', () => {
  it('accepts a well-formed tool', () => {
    expect(validateTool(tool('read_file', { description: 'reads' }), limits)).toMatchObject({ ok: true });
  });

  it.each([
    ['a bad name', tool('bad name!'), /name must match/],
    ['an empty name', tool(''), /name must match/],
    ['a name over 64 characters', tool('n'.repeat(65)), /name must match/],
    ['a non-object schema', { name: 't', inputSchema: { type: 'string' } }, /must be an object schema/],
    ['a schema without type', { name: 't', inputSchema: { properties: {} } }, /must be an object schema/],
    ['an uncompilable schema', { name: 't', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }, /does not compile/],
    ['an unknown keyword (ajv strict)', { name: 't', inputSchema: { type: 'object', frobnicate: true } }, /does not compile/],
    ['a schema over maxSchemaBytes', { name: 't', inputSchema: { type: 'object', description: 'x'.repeat(2000) } }, /over the limit of 1024/],
    ['a schema nested too deep', { name: 't', inputSchema: nested(9) }, /deeper than 8/],
    ['a description too long', tool('t', { description: 'd'.repeat(101) }), /longer than 100/],
    ['a missing inputSchema', { name: 't' }, /malformed/],
    ['an unknown key', tool('t', { extra: 1 }), /malformed/],
    ['a non-object', 'just a string', /malformed/],
  ])('rejects %s with a reason', (_label, value, reason) => {
    const check = validateTool(value, limits);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toMatch(reason);
  });

  it('accepts a schema exactly at the depth limit and rejects one level more', () => {
    const schema = nested(8); // {type, properties: {x: …}}: 2 levels per step, 15 in all
    expect(jsonDepth(schema, 100)).toBe(15);
    expect(validateTool({ name: 't', inputSchema: schema }, { ...limits, maxSchemaDepth: 15 }).ok).toBe(true);
    expect(validateTool({ name: 't', inputSchema: schema }, { ...limits, maxSchemaDepth: 14 }).ok).toBe(false);
  });

  it('measures depth of objects and arrays and stops past the limit', () => {
    expect(jsonDepth(1, 5)).toBe(0);
    expect(jsonDepth({}, 5)).toBe(1);
    expect(jsonDepth({ a: [{ b: 1 }] }, 5)).toBe(3);
    expect(jsonDepth(nested(100), 5)).toBe(6);
  });
});

describe('ToolRegistry.replace', () => {
  it('rejects only the bad tool and accepts the rest, in qualified form', () => {
    const r = registry();
    const { advertised, changed } = r.replace('alpha', [tool('good'), tool('bad name!'), { name: 'notobject', inputSchema: { type: 'array' } }]);
    expect(changed).toBe(true);
    expect(advertised.type).toBe('advertised');
    expect(advertised.accepted).toEqual([{ name: 'good', as: 'alpha__good' }]);
    expect(advertised.rejected.map((x) => x.name)).toEqual(['bad name!', 'notobject']);
    expect(r.list().map((t) => t.name)).toEqual(['alpha__good']);
    expect(r.lookup('alpha__good')).toMatchObject({ host: 'alpha', spec: { name: 'good' } });
  });

  it('rejects tools beyond maxToolsPerHost', () => {
    const { advertised } = registry({ maxToolsPerHost: 2 }).replace('alpha', [tool('a'), tool('b'), tool('c')]);
    expect(advertised.accepted.map((x) => x.name)).toEqual(['a', 'b']);
    expect(advertised.rejected).toEqual([{ name: 'c', reason: expect.stringMatching(/too many tools: at most 2/) }]);
  });

  it('rejects a duplicate name within one advertise, keeping the first', () => {
    const { advertised } = registry().replace('alpha', [tool('a', { description: 'first' }), tool('a', { description: 'second' })]);
    expect(advertised.accepted).toEqual([{ name: 'a', as: 'alpha__a' }]);
    expect(advertised.rejected).toEqual([{ name: 'a', reason: 'duplicate tool name in this advertise' }]);
  });

  it('rejects a qualified name longer than 64 characters', () => {
    const host = 'h'.repeat(40);
    const { advertised } = registry().replace(host, [tool('t'.repeat(23)), tool('t'.repeat(22))]);
    expect(advertised.accepted.map((x) => x.as)).toEqual([`${host}__${'t'.repeat(22)}`]);
    expect(advertised.rejected[0]!.reason).toMatch(/longer than 64/);
  });

  it('naming qualified: two hosts may advertise the same tool name', () => {
    const r = registry();
    r.replace('alpha', [tool('read')]);
    const { advertised } = r.replace('beta', [tool('read')]);
    expect(advertised.rejected).toEqual([]);
    expect(r.list().map((t) => t.name)).toEqual(['alpha__read', 'beta__read']);
  });

  it('naming qualified: an ambiguous qualified name is kept by the first host', () => {
    const r = registry();
    r.replace('a', [tool('_b')]); // a___b
    const { advertised } = r.replace('a_', [tool('b')]); // a___b as well
    expect(advertised.accepted).toEqual([]);
    expect(advertised.rejected[0]!.reason).toMatch(/already advertised by another host/);
  });

  it('naming bare: the first host keeps a name, a later duplicate is rejected with a reason', () => {
    const r = registry({ naming: 'bare' });
    expect(r.replace('alpha', [tool('read'), tool('write')]).advertised.accepted).toEqual([
      { name: 'read', as: 'read' },
      { name: 'write', as: 'write' },
    ]);
    const second = r.replace('beta', [tool('read'), tool('grep')]).advertised;
    expect(second.accepted).toEqual([{ name: 'grep', as: 'grep' }]);
    expect(second.rejected).toEqual([{ name: 'read', reason: expect.stringMatching(/already advertised by another host.*bare/) }]);
    expect(r.lookup('read')?.host).toBe('alpha');
    // The owner re-advertising its own names does not collide with itself.
    expect(r.replace('alpha', [tool('read')]).advertised.rejected).toEqual([]);
    // Once the owner leaves, the name is free for the next advertise.
    r.remove('alpha');
    expect(r.replace('beta', [tool('read'), tool('grep')]).advertised.rejected).toEqual([]);
    expect(r.lookup('read')?.host).toBe('beta');
  });
});

describe('ToolRegistry change tracking and list()', () => {
  it('reports a change only when the exposed set differs', () => {
    const r = registry();
    expect(r.replace('alpha', [tool('a')]).changed).toBe(true);
    expect(r.replace('alpha', [tool('a')]).changed).toBe(false);
    expect(r.replace('alpha', [tool('a', { description: 'new' })]).changed).toBe(true);
    expect(r.replace('alpha', [{ name: 'a', description: 'new', inputSchema: { type: 'object', properties: {} } }]).changed).toBe(true);
    expect(r.replace('alpha', [tool('a'), tool('bad!')]).changed).toBe(true);
    expect(r.remove('alpha')).toBe(true);
    expect(r.remove('alpha')).toBe(false);
    expect(r.replace('beta', []).changed).toBe(false);
    expect(r.remove('beta')).toBe(false);
  });

  it('returns the same frozen array until a change, with the advertised schema object', () => {
    const r = registry();
    const schema = { type: 'object', properties: { p: { type: 'string' } } };
    r.replace('alpha', [{ name: 'a', description: 'd', inputSchema: schema }, tool('b')]);
    const first = r.list();
    expect(r.list()).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first[0]).toEqual({ name: 'alpha__a', description: 'd', inputSchema: schema });
    expect(first[0]!.inputSchema).toBe(schema);
    expect('description' in first[1]!).toBe(false);
    r.replace('alpha', [tool('a'), tool('b')]);
    expect(r.list()).not.toBe(first);
    expect(r.namesOf('alpha')).toEqual(['alpha__a', 'alpha__b']);
  });
});
