/**
 * Issue 15 §1 — advertised input schemas in draft-07, 2019-09 and 2020-12, chosen by `$schema`
 * (2020-12 when absent, as MCP 2025-11-25 says), under the same untrusted-schema rules in every
 * dialect; a zod 4 `toJSONSchema()` schema (tuples, `$defs`, `$ref`) validates input, on the event
 * loop and through the compile worker's standalone code.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolHost } from '@toolwire/client';
import { Defaults } from '@toolwire/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_DIALECT, compileToSource, dialectOf, instantiate, newAjv } from '../src/registry/ajv-setup.js';
import { ToolRegistry } from '../src/registry/registry.js';
import { checkInput, compileInputSchema } from '../src/registry/schema-cache.js';
import { ToolwireServer } from '../src/toolwire-server.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const limits = {
  naming: 'qualified' as const,
  maxToolsPerHost: 256,
  maxSchemaBytes: Defaults.maxSchemaBytes,
  maxSchemaDepth: Defaults.maxSchemaDepth,
  maxDescriptionChars: Defaults.maxDescriptionChars,
};

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
const DRAFT_2019 = 'https://json-schema.org/draft/2019-09/schema';
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

function reasonOf(schema: unknown): string | undefined {
  return new ToolRegistry(limits).replace('alpha', [{ name: 't', inputSchema: schema }]).advertised.rejected[0]?.reason;
}

/** The validator of `schema` made both ways: on the event loop, and from worker-style standalone code. */
function validators(schema: object): ((input: unknown) => string | undefined)[] {
  const here = compileInputSchema(schema);
  if (!here.ok) throw new Error(here.reason);
  const standalone = instantiate(compileToSource(newAjv({ source: true }), JSON.parse(JSON.stringify(schema)) as object).source);
  return [(input) => checkInput(here.validate, input), (input) => checkInput(standalone, input)];
}

/** A zod 4 model with a tuple, a tuple with a rest element, a reused object ($defs + $ref), a recursive one, nullable and a record. */
function zodSchema(): Record<string, unknown> {
  const Point = z.object({ x: z.number(), y: z.number() });
  const Node = z.object({
    name: z.string(),
    get children() {
      return z.array(Node).optional();
    },
  });
  const model = z.object({
    pair: z.tuple([z.string(), z.number()]),
    rest: z.tuple([z.string()], z.boolean()),
    from: Point,
    to: Point,
    tree: Node,
    note: z.string().nullable(),
    tags: z.record(z.string(), z.number()).optional(),
    slug: z.string().regex(/^[a-z-]+$/),
    when: z.iso.datetime().optional(),
  });
  return z.toJSONSchema(model, { reused: 'ref' });
}

/** An input the zod schema accepts. */
const valid = {
  pair: ['a', 1],
  rest: ['head', true, false],
  from: { x: 0, y: 1 },
  to: { x: 2, y: 3 },
  tree: { name: 'root', children: [{ name: 'leaf' }] },
  note: null,
  slug: 'a-b',
  when: '2026-12-02T03:04:05Z',
};

describe('dialect chosen by $schema', () => {
  it('reads a missing $schema as 2020-12 and each supported URI (http/https, with or without #) as its dialect', () => {
    expect(DEFAULT_DIALECT).toBe('2020-12');
    expect(dialectOf({ type: 'object' })).toEqual({ dialect: '2020-12' });
    for (const uri of [DRAFT_07, 'http://json-schema.org/draft-07/schema', 'https://json-schema.org/draft-07/schema#'])
      expect(dialectOf({ $schema: uri })).toEqual({ dialect: 'draft-07' });
    for (const uri of [DRAFT_2019, 'https://json-schema.org/draft/2019-09/schema#']) expect(dialectOf({ $schema: uri })).toEqual({ dialect: '2019-09' });
    for (const uri of [DRAFT_2020, 'http://json-schema.org/draft/2020-12/schema#']) expect(dialectOf({ $schema: uri })).toEqual({ dialect: '2020-12' });
  });

  it('refuses a tool whose $schema names another dialect or is not a string, saying which are supported', () => {
    for (const $schema of ['http://json-schema.org/draft-04/schema#', 'https://evil.example/schema', 7, null]) {
      expect(reasonOf({ $schema, type: 'object' })).toMatch(/\$schema .* is not a supported dialect: use "https:\/\/json-schema.org\/draft\/2020-12\/schema"/);
    }
  });

  it('keeps draft-07 working when declared: tuple items, additionalItems, dependencies, definitions', () => {
    const schema = {
      $schema: DRAFT_07,
      type: 'object',
      definitions: { n: { type: 'number' } },
      properties: {
        pair: { type: 'array', items: [{ type: 'string' }, { $ref: '#/definitions/n' }], additionalItems: false },
        a: { type: 'string' },
        b: { type: 'string' },
      },
      dependencies: { a: ['b'] },
    };
    expect(reasonOf(schema)).toBeUndefined();
    for (const check of validators(schema)) {
      expect(check({ pair: ['x', 1], a: 'p', b: 'q' })).toBeUndefined();
      expect(check({ pair: ['x', 'y'] })).toMatch(/\/pair\/1 must be number/);
      expect(check({ pair: ['x', 1, 2] })).toMatch(/must NOT have more than 2 items/);
      expect(check({ a: 'p' })).toMatch(/must have property b when property a is present/);
    }
  });

  it('accepts 2019-09 keywords (dependentRequired, unevaluatedProperties, $defs) when declared', () => {
    const schema = {
      $schema: DRAFT_2019,
      type: 'object',
      $defs: { s: { type: 'string' } },
      properties: { a: { $ref: '#/$defs/s' } },
      allOf: [{ properties: { b: { type: 'string' } } }],
      dependentRequired: { a: ['b'] },
      unevaluatedProperties: false,
    };
    expect(reasonOf(schema)).toBeUndefined();
    for (const check of validators(schema)) {
      expect(check({ a: 'x', b: 'y' })).toBeUndefined();
      expect(check({ a: 'x' })).toMatch(/must have property b when property a is present/);
      expect(check({ a: 'x', b: 'y', c: 1 })).toMatch(/must NOT have unevaluated properties/);
    }
  });

  it('reads a schema without $schema as 2020-12: prefixItems works, and a draft-07-only form is refused with the way out', () => {
    const schema = { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false, minItems: 2 } } };
    expect(reasonOf(schema)).toBeUndefined();
    for (const check of validators(schema)) {
      expect(check({ pair: ['a', 1] })).toBeUndefined();
      expect(check({ pair: ['a', 1, 2] })).toMatch(/must NOT have more than 2 items/);
    }
    const draft07Style = {
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], additionalItems: false, minItems: 2 } },
    };
    expect(reasonOf(draft07Style)).toMatch(
      /^inputSchema does not compile: no \$schema, so read as JSON Schema 2020-12, but it is draft-07: declare "\$schema": "http:\/\/json-schema.org\/draft-07\/schema#" \(2020-12: schema is invalid: data\/properties\/pair\/items must be object,boolean/,
    );
    expect(reasonOf({ $schema: DRAFT_07, ...draft07Style })).toBeUndefined();
  });
});

describe('a zod 4 schema (2020-12, tuples, $defs, $ref)', () => {
  it('is what the issue names: $schema 2020-12, prefixItems, $defs and $ref', () => {
    const text = JSON.stringify(zodSchema());
    expect(text).toContain(`"$schema":"${DRAFT_2020}"`);
    expect(text).toContain('"prefixItems"');
    expect(text).toContain('"$defs"');
    expect(text).toContain('"$ref":"#/$defs/');
  });

  it('is accepted at advertise time and validates input, on the event loop and from standalone code', () => {
    const schema = zodSchema();
    expect(reasonOf(schema)).toBeUndefined();
    for (const check of validators(schema)) {
      expect(check(valid)).toBeUndefined();
      expect(check({ ...valid, pair: ['a', 'b'] })).toMatch(/\/pair\/1 must be number/);
      expect(check({ ...valid, pair: ['a', 1, 2] })).toMatch(/\/pair must NOT have more than 2 items/);
      expect(check({ ...valid, rest: ['head', 'no'] })).toMatch(/\/rest\/1 must be boolean/);
      expect(check({ ...valid, to: { x: 1 } })).toMatch(/\/to must have required property 'y'/);
      expect(check({ ...valid, tree: { name: 'r', children: [{ name: 1 }] } })).toMatch(/\/tree\/children\/0\/name must be string/);
      expect(check({ ...valid, note: 3 })).toMatch(/\/note must be string,null/);
      expect(check({ ...valid, slug: 'Not A Slug' })).toMatch(/\/slug must match pattern/);
      expect(check({ ...valid, extra: 1 })).toMatch(/must NOT have additional properties/);
    }
  });
});

describe('a zod 4 tool through a real server (compiled in the worker), a tool host and the MCP SDK client', () => {
  it('lists the tool with its schema, runs valid input unchanged and refuses invalid input with 65 and the reason', { timeout: 30_000 }, async () => {
    const server = new ToolwireServer({
      hosts: [{ name: 'alpha', token: 'host-token-dialects-1' }],
      callers: [{ name: 'agent', token: 'caller-token-dialects-1' }],
    });
    cleanups.push(() => server.close());
    const info = await server.listen(0, '127.0.0.1');
    const host = new ToolHost({ server: info.url, token: 'host-token-dialects-1', reconnect: false });
    host.tool('plan', { inputSchema: zodSchema() }, (input) => JSON.stringify(input));
    cleanups.push(() => host.close());
    const advertised = await host.start();
    expect(advertised.rejected).toEqual([]);
    const transport = new StreamableHTTPClientTransport(new URL(info.mcpUrl), { requestInit: { headers: { Authorization: 'Bearer caller-token-dialects-1' } } });
    const client = new Client({ name: 'dialects-test', version: '1.0.0' });
    await client.connect(transport);
    cleanups.push(() => client.close());
    const listed = (await client.listTools()).tools.find((t) => t.name === 'alpha__plan');
    expect(listed?.inputSchema).toMatchObject({ $schema: DRAFT_2020, $defs: expect.any(Object) });
    const ok = await client.callTool({ name: 'alpha__plan', arguments: valid });
    expect(ok.structuredContent).toMatchObject({ exitCode: 0 });
    expect(JSON.parse((ok.structuredContent as { stdout: string }).stdout)).toEqual(valid);
    const bad = await client.callTool({ name: 'alpha__plan', arguments: { ...valid, pair: ['a', 'b'], tree: { name: 1 } } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ exitCode: 65 });
    expect((bad.structuredContent as { stderr: string }).stderr).toMatch(
      /\/pair\/1 must be number.*\/tree\/name must be string|\/tree\/name must be string.*\/pair\/1 must be number/s,
    );
  });
});

describe('the untrusted-schema rules hold in 2019-09 and 2020-12', () => {
  for (const $schema of [DRAFT_2019, DRAFT_2020, undefined]) {
    const declared = $schema === undefined ? {} : { $schema };
    const label = $schema ?? 'no $schema';

    it(`${label}: unknown keywords, remote $ref, $dynamicRef/$recursiveRef to elsewhere, non-RE2 patterns and long patterns are refused`, () => {
      expect(reasonOf({ ...declared, type: 'object', frobnicate: true })).toMatch(/strict mode: unknown keyword: "frobnicate"/);
      expect(reasonOf(JSON.parse(`{${$schema ? `"$schema":"${$schema}",` : ''}"type":"object","__proto__":{"x":1}}`))).toMatch(/unknown keyword: "__proto__"/);
      for (const ref of ['https://evil.example/schema.json', 'file:///etc/passwd']) {
        expect(reasonOf({ ...declared, type: 'object', properties: { a: { $ref: ref } } })).toMatch(/can't resolve reference/);
      }
      const dynamic = $schema === DRAFT_2019 ? { $recursiveRef: 'https://evil.example/x' } : { $dynamicRef: 'https://evil.example/x#meta' };
      expect(reasonOf({ ...declared, type: 'object', properties: { a: dynamic } })).toMatch(/Ref" only supports hash fragment reference/);
      expect(reasonOf({ ...declared, type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a$' } } })).toMatch(
        /not supported by the linear-time regex engine/,
      );
      expect(reasonOf({ ...declared, type: 'object', properties: { s: { type: 'string', pattern: 'a'.repeat(1025) } } })).toMatch(/pattern is longer than 1024/);
      expect(reasonOf({ ...declared, type: 'object', properties: { s: { type: 'string', format: 'no-such-format' } } })).toMatch(/unknown format "no-such-format"/);
    });

    it(`${label}: a catastrophic pattern runs in linear time`, () => {
      const schema = { ...declared, type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
      const [here] = validators(schema);
      const began = performance.now();
      expect(here!({ s: `${'a'.repeat(100_000)}!` })).toMatch(/must match pattern/);
      expect(performance.now() - began).toBeLessThan(2_000);
    });
  }

  it('keeps a 2020-12 $id inside one schema invisible to every other schema, and the meta-schema in force', () => {
    const owner = {
      $schema: DRAFT_2020,
      type: 'object',
      $defs: { s: { $id: 'http://shared.example/s20', type: 'string' } },
      properties: { a: { $ref: 'http://shared.example/s20' } },
    };
    expect(reasonOf(owner)).toBeUndefined();
    expect(reasonOf({ type: 'object', properties: { b: { $ref: 'http://shared.example/s20' } } })).toMatch(/can't resolve reference/);
    expect(reasonOf({ $id: DRAFT_2020, type: 'object' })).toBeUndefined();
    expect(reasonOf({ type: 'object', properties: { x: { type: 'nope' } } })).toMatch(/schema is invalid/);
  });
});
