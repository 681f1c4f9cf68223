/**
 * Compiling advertised input schemas. Schemas come from hosts and are untrusted: ajv strict mode, no
 * remote `$ref` loading (no `loadSchema`), size and depth bounded by the caller. Each schema object
 * is compiled once; the executor and the registry share the cache.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { formatAjvErrors } from '@toolwire/protocol';

const ajv = new Ajv({ strict: true, allErrors: true, validateSchema: true, addUsedSchema: false });
const cache = new WeakMap<object, ValidateFunction>();

/** Outcome of compiling one input schema. */
export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; reason: string };

/**
 * Compile `schema` (cached by object identity). Never throws: a schema ajv refuses yields
 * `{ok: false, reason}`, e.g. `schema is invalid: data/type must be equal to one of the allowed values`.
 */
export function compileInputSchema(schema: object): Compiled {
  const hit = cache.get(schema);
  if (hit) return { ok: true, validate: hit };
  try {
    const validate = ajv.compile(schema);
    cache.set(schema, validate);
    return { ok: true, validate };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Validate `input` against a compiled schema; returns the ajv errors as one line, or `undefined` when valid. */
export function checkInput(validate: ValidateFunction, input: unknown): string | undefined {
  return validate(input) ? undefined : formatAjvErrors(validate.errors);
}
