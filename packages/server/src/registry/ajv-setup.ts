/**
 * The one ajv configuration for advertised input schemas (untrusted), used on the event loop (small
 * schemas, the synchronous fallback) and in the compile worker (everything else):
 * - strict mode (unknown keywords, formats and ambiguous types refuse the schema), keyword names
 *   such as `constructor` or `__proto__` included;
 * - no remote `$ref` loading (no `loadSchema`);
 * - `pattern` / `patternProperties` on RE2JS, a linear-time regex engine (no ReDoS); a pattern RE2
 *   cannot express or longer than {@link MAX_PATTERN_LENGTH} refuses the schema;
 * - formats from ajv-formats ("fast" mode; `url` checked with the WHATWG URL parser);
 * - {@link compileToSource}: a worker compiles to standalone code, and {@link instantiate} turns
 *   that code into the validator on the event loop, which then pays only for V8 parsing the code.
 */
import { createRequire } from 'node:module';
import { _, Ajv, type ValidateFunction } from 'ajv';
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

/** A fresh ajv for advertised schemas; `source: true` keeps the code for {@link compileToSource}. */
export function newAjv(options: { source: boolean }): Ajv {
  const ajv = new Ajv({
    strict: true,
    allErrors: true,
    validateSchema: true,
    addUsedSchema: false,
    code: { regExp: safeRegExp, source: options.source, formats: _`require("toolwire:formats")` },
  });
  for (const [name, format] of Object.entries(FORMATS)) ajv.addFormat(name, format);
  // ajv looks keywords up in plain objects, so a schema key named after an Object.prototype member
  // ("constructor", "__proto__", "toString", …) passed as a known keyword and slipped through strict
  // mode. Without a prototype those lookups miss and strict mode reports the unknown keyword.
  Object.setPrototypeOf(ajv.RULES.keywords, null);
  Object.setPrototypeOf(ajv.RULES.all, null);
  return ajv;
}

/**
 * Compile `schema` on `ajv`, leaving ajv's ref, schema and cache tables as they were: a nested `$id`
 * cannot be reached or displaced by another schema, and ajv keeps no strong reference to the schema.
 * Returns the validator and the RE2 program size of its patterns. Throws ajv's error when the
 * schema does not compile.
 */
export function compileIsolated(ajv: Ajv, schema: object): { validate: ValidateFunction; regexProgram: number } {
  const refs = new Set(Object.keys(ajv.refs));
  const schemas = new Set(Object.keys(ajv.schemas));
  regexProgram = 0;
  try {
    return { validate: ajv.compile(schema), regexProgram };
  } finally {
    const table = ajv.refs as Record<string, unknown>;
    for (const key of Object.keys(table)) if (!refs.has(key)) delete table[key];
    const known = ajv.schemas as Record<string, unknown>;
    for (const key of Object.keys(known)) if (!schemas.has(key)) delete known[key];
    // ajv's cache would keep every schema compiled on this instance (and its validator) alive.
    // Not `removeSchema(schema)`: that also deletes the table entry of the schema's `$id`, which may
    // be the meta-schema's. The cache is keyed by the schema object (ajv 8, pinned).
    (ajv as unknown as { _cache: Map<object, unknown> })._cache.delete(schema);
  }
}

/** Compile `schema` (on an ajv made with `source: true`) to standalone CommonJS code for {@link instantiate}. */
export function compileToSource(ajv: Ajv, schema: object): { source: string; regexProgram: number } {
  const { validate, regexProgram: program } = compileIsolated(ajv, schema);
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
