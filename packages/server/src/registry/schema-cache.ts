/**
 * Compiled advertised input schemas, cached (ajv configuration and its safety rules: `ajv-setup.ts`).
 * - Each schema object is compiled once (WeakMap by identity); identical schema texts share one
 *   compiled validator, or one refusal (a bounded LRU by text: at most {@link MAX_CACHED_SCHEMAS}
 *   entries and {@link MAX_CACHED_SCHEMA_BYTES} bytes of text and code), so a host re-advertising
 *   the same tools compiles nothing, and a schema that does not compile is not compiled twice.
 * - Schemas compiled here, on the event loop, use an ajv instance replaced every
 *   {@link COMPILES_PER_GENERATION} compiles, so ajv's internal tables cannot grow without bound; a
 *   cached validator of an old generation is dropped when the generation changes (it keeps its ajv
 *   instance alive). Validators made from worker code (`SchemaCompiler`) hold no ajv instance.
 * The asynchronous, budgeted path a host's `advertise` takes is `schema-compiler.ts`; the
 * synchronous {@link compileInputSchema} is for callers that hold a schema no advertise compiled.
 */
import type { ValidateFunction } from 'ajv';
import { formatAjvErrors } from '@toolwire/protocol';
import { compileIsolated, MAX_PATTERN_LENGTH, MAX_REGEX_PROGRAM, newAjv, regexReason, type SchemaAjv } from './ajv-setup.js';

export { MAX_PATTERN_LENGTH, MAX_REGEX_PROGRAM };

/** Compiles served by one event-loop ajv instance before a fresh one takes over. */
export const COMPILES_PER_GENERATION = 256;
/** Distinct schema texts whose compile outcome is kept for reuse (least recently used dropped first). */
export const MAX_CACHED_SCHEMAS = 256;
/** Bytes of schema text and validator code the text cache holds at most. 8 MiB. */
export const MAX_CACHED_SCHEMA_BYTES = 8 * 1024 * 1024;

/** Outcome of compiling one input schema. */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

interface Entry {
  compiled: Compiled;
  /** Text plus (estimated) code bytes this entry holds. */
  bytes: number;
  /** The event-loop ajv generation that compiled it; 0 for validators that hold no ajv instance. */
  generation: number;
}

let ajv: SchemaAjv = newAjv({ source: false });
let compiles = 0;
let generation = 1;
const byObject = new WeakMap<object, ValidateFunction>();
const byText = new Map<string, Entry>();
let cachedBytes = 0;

/** Counters for tests and diagnostics: the current ajv generation, the cached texts and their bytes. */
export function schemaCacheStats(): { generation: number; cachedTexts: number; cachedBytes: number; ajvRefs: number } {
  return { generation, cachedTexts: byText.size, cachedBytes, ajvRefs: ajv.refCount };
}

function drop(text: string, entry: Entry): void {
  byText.delete(text);
  cachedBytes -= entry.bytes;
}

/** The cached outcome for `text` (marked most recently used), or `undefined`. */
export function cachedOutcome(text: string): Compiled | undefined {
  const entry = byText.get(text);
  if (entry === undefined) return undefined;
  byText.delete(text);
  byText.set(text, entry);
  return entry.compiled;
}

/**
 * Remember the outcome of compiling `text` (a refusal only when it is a property of the schema,
 * e.g. ajv's error, never a budget or a timeout). `schema`, when given, is the object the executor
 * will look up. `codeBytes`: size of the validator's code, when known.
 */
export function rememberOutcome(text: string, compiled: Compiled, schema?: object, codeBytes?: number, fromGeneration = 0): void {
  if (compiled.ok && schema !== undefined) byObject.set(schema, compiled.validate);
  const old = byText.get(text);
  if (old !== undefined) drop(text, old);
  const estimate = compiled.ok ? text.length * 16 : 0;
  const bytes = text.length + (codeBytes ?? (old?.compiled === compiled ? old.bytes - text.length : estimate));
  byText.set(text, { compiled, bytes, generation: old?.compiled === compiled ? old.generation : fromGeneration });
  cachedBytes += bytes;
  for (const [key, entry] of byText) {
    if (byText.size <= MAX_CACHED_SCHEMAS && cachedBytes <= MAX_CACHED_SCHEMA_BYTES) break;
    drop(key, entry);
  }
}

/** The validator already made for this very schema object, if any. */
export function compiledFor(schema: object): ValidateFunction | undefined {
  return byObject.get(schema);
}

/**
 * Compile `schema` on the event loop, uncached, on the current generation. Never throws: a schema
 * ajv refuses yields `{ok: false, reason}`, e.g. `schema is invalid: data/type must be equal to one
 * of the allowed values`. Returns the generation that compiled it (for {@link rememberOutcome}).
 */
export function compileHere(schema: object): { compiled: Compiled; generation: number } {
  if (compiles >= COMPILES_PER_GENERATION) {
    ajv = newAjv({ source: false });
    compiles = 0;
    // Validators of the old generation keep the old instance alive: forget them (tools that still
    // use one keep it through the WeakMap by their live schema object).
    for (const [key, entry] of byText) if (entry.generation === generation) drop(key, entry);
    generation++;
  }
  compiles++;
  try {
    const { validate, regexProgram } = compileIsolated(ajv, schema);
    if (regexProgram > MAX_REGEX_PROGRAM) {
      return { compiled: { ok: false, reason: regexReason(regexProgram) }, generation };
    }
    return { compiled: { ok: true, validate }, generation };
  } catch (error) {
    return { compiled: { ok: false, reason: error instanceof Error ? error.message : String(error) }, generation };
  }
}

/**
 * Compile `schema` synchronously on the event loop (cached by object identity, then by JSON text;
 * `knownText`: that text, when the caller has it). Never throws. For a schema that did not come through an `advertise` (which compiles off the event
 * loop, within the host's budget, before a tool is listed).
 */
export function compileInputSchema(schema: object, knownText?: string): Compiled {
  const hit = byObject.get(schema);
  if (hit) return { ok: true, validate: hit };
  let text: string;
  try {
    text = knownText ?? JSON.stringify(schema);
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
  const cached = cachedOutcome(text);
  if (cached !== undefined) {
    if (cached.ok) byObject.set(schema, cached.validate);
    return cached;
  }
  const { compiled, generation: made } = compileHere(schema);
  rememberOutcome(text, compiled, schema, undefined, made);
  return compiled;
}

/** Validate `input` against a compiled schema; returns the ajv errors as one line, or `undefined` when valid. */
export function checkInput(validate: ValidateFunction, input: unknown): string | undefined {
  return validate(input) ? undefined : formatAjvErrors(validate.errors);
}
