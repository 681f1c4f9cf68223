/**
 * The one ajv configuration for advertised input schemas (untrusted), used on the event loop (small
 * schemas, the synchronous fallback) and in the compile worker (everything else):
 * - the JSON Schema dialect chosen by the schema's `$schema` ({@link dialectOf}): draft-07, 2019-09
 *   or 2020-12, and 2020-12 when `$schema` is absent (the default dialect of MCP since 2025-11-25);
 *   each dialect has its own ajv instance, made at its first compile;
 * - strict mode (unknown keywords, formats and ambiguous types refuse the schema), keyword names
 *   such as `constructor` or `__proto__` included; union types (`"type": ["string", "null"]`) are
 *   allowed: they are plain JSON Schema, and what zod and other generators emit for nullable values;
 *   so are tuples that leave their length open (`strictTuples` off: a lint, not a safety rule);
 * - no remote `$ref` loading (no `loadSchema`);
 * - `pattern` / `patternProperties` on RE2JS, a linear-time regex engine (no ReDoS); a pattern RE2
 *   cannot express or longer than {@link MAX_PATTERN_LENGTH} refuses the schema;
 * - formats from ajv-formats ("fast" mode; `url` checked with the WHATWG URL parser);
 * - {@link compileToSource}: a worker compiles to standalone code, and {@link instantiate} turns
 *   that code into the validator on the event loop, which then pays only for V8 parsing the code.
 */
import { createRequire } from 'node:module';
import { _, Ajv, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { fastFormats } from 'ajv-formats/dist/formats.js';
import { RE2JS } from 're2js';

/** Longest `pattern` / `patternProperties` key accepted in an advertised schema, characters. */
export const MAX_PATTERN_LENGTH = 1024;

/** RE2 program instructions of all patterns of one schema, at most (the event loop compiles them again). */
export const MAX_REGEX_PROGRAM = 2048;

/** The refusal of a schema whose patterns together exceed {@link MAX_REGEX_PROGRAM}. */
export function regexReason(program: number): string {
  return `its patterns make an RE2 program of ${program} instructions, over the limit of ${MAX_REGEX_PROGRAM}`;
}

// ajv's standalone generator is CommonJS: the function arrives as `module.exports` or as `.default`.
type Standalone = typeof standaloneModule.default;
const standaloneCode: Standalone = (standaloneModule as unknown as { default?: Standalone }).default ?? (standaloneModule as unknown as Standalone);

let regexProgram = 0;

/** ajv's `code.regExp` engine: RE2JS behind the `{test}` face ajv needs. Counts program size. */
function safeRegExp(pattern: string, _flags: string): { test(s: string): boolean; toString(): string } {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new Error(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    throw new Error(
      `pattern ${JSON.stringify(pattern.slice(0, 80))} is not supported by the linear-time regex engine (RE2 syntax: no look-around or back-references): ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  regexProgram += re.programSize();
  // ajv de-duplicates patterns by `toString()`: it must be unique per pattern.
  return { test: (s: string) => re.test(s), toString: () => `re2:${pattern}` };
}
// How standalone code reaches this engine (see `RUNTIME`).
safeRegExp.code = 'require("toolwire:re2").safeRegExp';

/** `format: "url"`: http(s)/ftp URL as the WHATWG parser reads it (linear; the ajv-formats regex backtracks). */
function isUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const protocol = new URL(value).protocol;
  return protocol === 'http:' || protocol === 'https:' || protocol === 'ftp:';
}

/** Every format an advertised schema may name. Standalone code reaches it as `require("toolwire:formats")`. */
const FORMATS = { ...fastFormats, url: isUrl };

/** The JSON Schema dialects an advertised schema may be written in. */
export type Dialect = 'draft-07' | '2019-09' | '2020-12';

/** The dialect of a schema without `$schema` (MCP 2025-11-25, SEP-1613: 2020-12). */
export const DEFAULT_DIALECT: Dialect = '2020-12';

/** The `$schema` of draft-07 as JSON Schema publishes it. */
const DRAFT_07_URI = 'http://json-schema.org/draft-07/schema#';

/** Accepted `$schema` values (scheme `http` or `https`, with or without a trailing `#`) → dialect. */
const DIALECT_URIS = new Map<string, Dialect>([
  ['json-schema.org/draft-07/schema', 'draft-07'],
  ['json-schema.org/draft/2019-09/schema', '2019-09'],
  ['json-schema.org/draft/2020-12/schema', '2020-12'],
]);

/**
 * The dialect `schema` declares in its `$schema`: {@link DEFAULT_DIALECT} when absent, else one of
 * `http(s)://json-schema.org/draft-07/schema[#]`, `…/draft/2019-09/schema[#]`,
 * `…/draft/2020-12/schema[#]`. Any other value: `{error}` naming the accepted ones.
 */
export function dialectOf(schema: object): { dialect: Dialect } | { error: string } {
  if (!Object.hasOwn(schema, '$schema')) return { dialect: DEFAULT_DIALECT };
  const uri = (schema as { $schema?: unknown }).$schema;
  const key = typeof uri === 'string' ? /^https?:\/\/(.*?)#?$/.exec(uri)?.[1] : undefined;
  const dialect = key === undefined ? undefined : DIALECT_URIS.get(key);
  if (dialect !== undefined) return { dialect };
  const shown = typeof uri === 'string' ? JSON.stringify(uri.slice(0, 120)) : `a ${uri === null ? 'null' : typeof uri}`;
  return {
    error: `$schema ${shown} is not a supported dialect: use "https://json-schema.org/draft/2020-12/schema" (the default when $schema is absent), "https://json-schema.org/draft/2019-09/schema" or "http://json-schema.org/draft-07/schema#"`,
  };
}

const AJV_CLASSES = { 'draft-07': Ajv, '2019-09': Ajv2019, '2020-12': Ajv2020 } satisfies Record<Dialect, new (options: Options) => Ajv>;

/**
 * One ajv instance for a dialect, configured for advertised schemas. `tracksEvaluated: false` (for
 * 2019-09 and 2020-12 schemas without `unevaluatedProperties`/`unevaluatedItems`, the only keywords
 * that read it) leaves out ajv's tracking of evaluated properties and items: its compile time
 * grows with the square of the properties met through `allOf` and the like.
 */
function newDialectAjv(dialect: Dialect, source: boolean, tracksEvaluated: boolean): Ajv {
  const ajv = new AJV_CLASSES[dialect]({
    strict: true,
    // Not a safety rule: a tuple with a rest element (zod's `z.tuple([a], rest)`) is legitimate.
    strictTuples: false,
    allowUnionTypes: true,
    allErrors: true,
    validateSchema: true,
    addUsedSchema: false,
    code: { regExp: safeRegExp, source, formats: _`require("toolwire:formats")` },
  });
  for (const [name, format] of Object.entries(FORMATS)) ajv.addFormat(name, format);
  // ajv looks keywords up in plain objects, so a schema key named after an Object.prototype member
  // ("constructor", "__proto__", "toString", …) passed as a known keyword and slipped through strict
  // mode. Without a prototype those lookups miss and strict mode reports the unknown keyword.
  Object.setPrototypeOf(ajv.RULES.keywords, null);
  Object.setPrototypeOf(ajv.RULES.all, null);
  // Ajv2019/Ajv2020 force the option on in their constructor; every use of it reads `opts` at compile time.
  if (!tracksEvaluated) (ajv.opts as { unevaluated?: boolean }).unevaluated = false;
  return ajv;
}

/** The ajv instances for advertised schemas, per {@link Dialect} (two for 2019-09 and 2020-12), each made at its first use. */
export class SchemaAjv {
  readonly #source: boolean;
  readonly #instances = new Map<string, Ajv>();

  constructor(source: boolean) {
    this.#source = source;
  }

  /** The instance for `dialect`; `unevaluated`: the schema uses `unevaluatedProperties` or `unevaluatedItems`. */
  for(dialect: Dialect, unevaluated = true): Ajv {
    const tracks = dialect !== 'draft-07' && unevaluated;
    const key = `${dialect}${tracks ? '+' : ''}`;
    let ajv = this.#instances.get(key);
    if (ajv === undefined) {
      ajv = newDialectAjv(dialect, this.#source, tracks);
      this.#instances.set(key, ajv);
    }
    return ajv;
  }

  /** Entries of the instances' ref tables, together (for tests: they must not grow with compiles). */
  get refCount(): number {
    let n = 0;
    for (const ajv of this.#instances.values()) n += Object.keys(ajv.refs).length;
    return n;
  }
}

/** Fresh ajv instances for advertised schemas; `source: true` keeps the code for {@link compileToSource}. */
export function newAjv(options: { source: boolean }): SchemaAjv {
  return new SchemaAjv(options.source);
}

/**
 * Compile `schema` on the instance of its dialect ({@link dialectOf}; its `$schema` is not handed
 * to ajv, which would look the meta-schema up by that exact URI), leaving ajv's ref, schema and
 * cache tables as they were: a nested `$id` cannot be reached or displaced by another schema, and
 * ajv keeps no strong reference to the schema. Returns the validator, the instance that compiled it
 * and the RE2 program size of its patterns. Throws ajv's error when the schema does not compile, or
 * the dialect's refusal.
 */
export function compileIsolated(ajvs: SchemaAjv, schema: object): { validate: ValidateFunction; regexProgram: number; ajv: Ajv } {
  const chosen = dialectOf(schema);
  if ('error' in chosen) throw new Error(chosen.error);
  // Own keys copied as they are (a "__proto__" key stays a key, for strict mode to refuse).
  const body: Record<string, unknown> = { ...schema };
  delete body.$schema;
  const ajv = ajvs.for(chosen.dialect, JSON.stringify(body).includes('"unevaluated'));
  const refs = new Set(Object.keys(ajv.refs));
  const schemas = new Set(Object.keys(ajv.schemas));
  regexProgram = 0;
  try {
    return { validate: ajv.compile(body), regexProgram, ajv };
  } catch (error) {
    if (Object.hasOwn(schema, '$schema') || !(error instanceof Error) || !compilesAsDraft07(ajvs, body)) throw error;
    // Written for draft-07 without saying so (tuple "items": [...], "additionalItems"): say how to fix it.
    throw new Error(
      `no $schema, so read as JSON Schema ${DEFAULT_DIALECT}, but it is draft-07: declare "$schema": "${DRAFT_07_URI}" (${DEFAULT_DIALECT}: ${error.message})`,
      {
        cause: error,
      },
    );
  } finally {
    const table = ajv.refs as Record<string, unknown>;
    for (const key of Object.keys(table)) if (!refs.has(key)) delete table[key];
    const known = ajv.schemas as Record<string, unknown>;
    for (const key of Object.keys(known)) if (!schemas.has(key)) delete known[key];
    // ajv's cache would keep every schema compiled on this instance (and its validator) alive.
    // Not `removeSchema(body)`: that also deletes the table entry of the schema's `$id`, which may
    // be the meta-schema's. The cache is keyed by the schema object (ajv 8, pinned).
    (ajv as unknown as { _cache: Map<object, unknown> })._cache.delete(body);
  }
}

/** True when `body` (no `$schema`) compiles as draft-07; nothing of it is kept. */
function compilesAsDraft07(ajvs: SchemaAjv, body: object): boolean {
  try {
    compileIsolated(ajvs, { ...body, $schema: DRAFT_07_URI });
    return true;
  } catch {
    return false;
  }
}

/** Compile `schema` (on an ajv made with `source: true`) to standalone CommonJS code for {@link instantiate}. */
export function compileToSource(ajvs: SchemaAjv, schema: object): { source: string; regexProgram: number } {
  const { validate, regexProgram: program, ajv } = compileIsolated(ajvs, schema);
  return { source: standaloneCode(ajv, validate), regexProgram: program };
}

const nodeRequire = createRequire(import.meta.url);
/** What standalone code may `require`: the regex engine, the formats and ajv's runtime helpers. Nothing else. */
const OURS = new Map<string, unknown>([
  ['toolwire:re2', { safeRegExp }],
  ['toolwire:formats', FORMATS],
]);
const AJV_RUNTIME = new Set(['equal', 'ucs2length', 'uri', 'validation_error']);

function runtimeRequire(id: string): unknown {
  if (OURS.has(id)) return OURS.get(id);
  const helper = id.startsWith('ajv/dist/runtime/') ? id.slice('ajv/dist/runtime/'.length) : undefined;
  if (helper === undefined || !AJV_RUNTIME.has(helper)) throw new Error(`standalone validator needs "${id}", which is not provided`);
  return nodeRequire(`ajv/dist/runtime/${helper}`);
}

/**
 * Turn standalone code from {@link compileToSource} (made by our own compiler, never by a peer) into
 * the validator. Costs V8 parsing the code and compiling its patterns again.
 */
export function instantiate(source: string): ValidateFunction {
  const module: { exports: unknown } = { exports: {} };
  // The same as ajv.compile does with its generated code, minus the generating.
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  const factory = new Function('require', 'module', 'exports', source) as (r: typeof runtimeRequire, m: typeof module, e: unknown) => void;
  factory(runtimeRequire, module, module.exports);
  if (typeof module.exports !== 'function') throw new Error('standalone validator code exported no function');
  return module.exports as ValidateFunction;
}
