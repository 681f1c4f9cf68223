/**
 * Compiling advertised input schemas. Schemas come from hosts and are untrusted:
 * - ajv in strict mode (unknown keywords, formats and ambiguous types refuse the schema), keyword
 *   names such as `constructor` or `__proto__` included;
 * - no remote `$ref` loading (no `loadSchema`): a `$ref` outside the schema (or the draft-07
 *   meta-schema) does not compile;
 * - `pattern` / `patternProperties` run on RE2JS, a linear-time regex engine (no backtracking, so
 *   no ReDoS); a pattern RE2 cannot express (look-around, back-references) or longer than
 *   {@link MAX_PATTERN_LENGTH} refuses the schema;
 * - formats from ajv-formats ("fast" mode; `url` checked with the WHATWG URL parser instead of a
 *   backtracking regex);
 * - size and depth are bounded by the caller (`validate-tool.ts`) before compiling, which bounds
 *   compile time;
 * - isolation: an `$id` inside one schema is not visible to any other schema (ajv's ref table is
 *   restored after each compile), and ajv instances are replaced every
 *   {@link COMPILES_PER_GENERATION} compiles so ajv's internal caches (schemas, patterns, compiled
 *   functions) cannot grow without bound as hosts re-advertise.
 * Each schema object is compiled once (WeakMap by identity); identical schema texts share one
 * compiled function (bounded LRU, emptied at each new generation), so a host re-advertising the same
 * tools compiles nothing, and old generations live only as long as tools still use them.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { RE2JS } from 're2js';
import { formatAjvErrors } from '@toolwire/protocol';

/** Longest `pattern` / `patternProperties` key accepted in an advertised schema, characters. */
export const MAX_PATTERN_LENGTH = 1024;
/** Compiles served by one ajv instance before a fresh one takes over. */
export const COMPILES_PER_GENERATION = 256;
/** Distinct schema texts whose compiled function is kept for reuse (least recently used dropped first). */
export const MAX_CACHED_SCHEMAS = 512;

/** Outcome of compiling one input schema. */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

// ajv-formats is CommonJS: its plugin arrives as `module.exports` or as its `.default`.
type FormatsPlugin = typeof addFormatsPlugin.default;
const addFormats: FormatsPlugin = (addFormatsPlugin as unknown as { default?: FormatsPlugin }).default ?? (addFormatsPlugin as unknown as FormatsPlugin);

/** ajv's `code.regExp` engine: RE2JS behind the `{test}` face ajv needs. */
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
  // ajv de-duplicates patterns by `toString()`: it must be unique per pattern.
  return { test: (s: string) => re.test(s), toString: () => `re2:${pattern}` };
}
safeRegExp.code = 'RE2JS';

/** `format: "url"`: http(s)/ftp URL as the WHATWG parser reads it (linear; the ajv-formats regex backtracks). */
function isUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const protocol = new URL(value).protocol;
  return protocol === 'http:' || protocol === 'https:' || protocol === 'ftp:';
}

function newAjv(): Ajv {
  const ajv = new Ajv({
    strict: true,
    allErrors: true,
    validateSchema: true,
    addUsedSchema: false,
    code: { regExp: safeRegExp },
  });
  addFormats(ajv, { mode: 'fast' });
  ajv.addFormat('url', isUrl);
  // ajv looks keywords up in plain objects, so a schema key named after an Object.prototype member
  // ("constructor", "__proto__", "toString", …) passed as a known keyword and slipped through strict
  // mode. Without a prototype those lookups miss and strict mode reports the unknown keyword.
  Object.setPrototypeOf(ajv.RULES.keywords, null);
  Object.setPrototypeOf(ajv.RULES.all, null);
  return ajv;
}

let ajv = newAjv();
let compiles = 0;
let generation = 1;
const byObject = new WeakMap<object, ValidateFunction>();
const byText = new Map<string, ValidateFunction>();

/** Counters for tests and diagnostics: the current ajv generation and the cached texts. */
export function schemaCacheStats(): { generation: number; cachedTexts: number; ajvRefs: number } {
  return { generation, cachedTexts: byText.size, ajvRefs: Object.keys(ajv.refs).length };
}

/** Compile on the current generation, leaving ajv's ref and schema tables as they were. */
function compileIsolated(schema: object): ValidateFunction {
  if (compiles >= COMPILES_PER_GENERATION) {
    ajv = newAjv();
    compiles = 0;
    generation++;
    // Cached functions would keep the old instance alive; from now on only the tools that still use
    // a schema of the old generation (WeakMap by their live object) keep it.
    byText.clear();
  }
  compiles++;
  const refs = new Set(Object.keys(ajv.refs));
  const schemas = new Set(Object.keys(ajv.schemas));
  try {
    return ajv.compile(schema);
  } finally {
    // A nested `$id` registers itself in ajv's global ref table; take it out again so another
    // host's schema can neither reach it by `$ref` nor collide with it.
    const table = ajv.refs as Record<string, unknown>;
    for (const key of Object.keys(table)) if (!refs.has(key)) delete table[key];
    const known = ajv.schemas as Record<string, unknown>;
    for (const key of Object.keys(known)) if (!schemas.has(key)) delete known[key];
  }
}

/**
 * Compile `schema` (cached by object identity, then by JSON text). Never throws: a schema ajv
 * refuses yields `{ok: false, reason}`, e.g.
 * `schema is invalid: data/type must be equal to one of the allowed values`.
 */
export function compileInputSchema(schema: object): Compiled {
  const hit = byObject.get(schema);
  if (hit) return { ok: true, validate: hit };
  try {
    const text = JSON.stringify(schema);
    let validate = byText.get(text);
    if (validate !== undefined) {
      byText.delete(text); // re-inserted last: most recently used
    } else {
      validate = compileIsolated(schema);
    }
    byText.set(text, validate);
    while (byText.size > MAX_CACHED_SCHEMAS) byText.delete(byText.keys().next().value!);
    byObject.set(schema, validate);
    return { ok: true, validate };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Validate `input` against a compiled schema; returns the ajv errors as one line, or `undefined` when valid. */
export function checkInput(validate: ValidateFunction, input: unknown): string | undefined {
  return validate(input) ? undefined : formatAjvErrors(validate.errors);
}
