/**
 * Checking one advertised tool (DESIGN §6: an invalid tool is rejected with a reason, the rest of the
 * advertise is accepted). Host input is untrusted: every check is bounded and none throws.
 * {@link examineTool} does the cheap checks (no ajv: it also runs in the offload worker); compiling
 * the schema is the second step (`schema-cache.ts`, `schema-compiler.ts`).
 */
import { checkToolSpec, NAME_PATTERN, type ToolAnnotations, type ToolSpec } from '@toolwire/protocol';

/** Limits applied to one advertised tool. Sizes in bytes. */
export interface ToolLimits {
  /** Largest inputSchema, bytes of its JSON text (ToolwireServerOptions.maxSchemaBytes, default 65536). */
  maxSchemaBytes: number;
  /** Deepest inputSchema nesting of objects/arrays, the schema itself being depth 1 (default 32). */
  maxSchemaDepth: number;
  /** Longest description, characters (protocol `Defaults.maxDescriptionChars`, 4096). */
  maxDescriptionChars: number;
}

/** Longest reason echoed in `advertised.rejected`, characters (ajv messages quote the peer's schema). */
export const MAX_REASON_CHARS = 512;

/**
 * A tool that passed the cheap checks: its name, description and schema text (the cache key);
 * `schema` is the parsed schema when the examiner kept it (on the event loop), else parse `text`.
 */
export interface ExaminedOk {
  ok: true;
  name: string;
  description?: string;
  text: string;
  schema?: Record<string, unknown>;
  /** Tool metadata (protocol 2), checked: `title` ≤ 256 characters, `outputSchema` within the inputSchema limits. */
  title?: string;
  annotations?: ToolAnnotations;
  outputSchema?: Record<string, unknown>;
}

/** A refused tool: the name to report and why. */
export interface Refused {
  ok: false;
  name: string;
  reason: string;
}

/** Outcome of the cheap checks of one tool. */
export type ExaminedTool = ExaminedOk | Refused;

/** Outcome of checking one tool completely (schema compiled): the well-formed spec and its schema text, or the refusal. */
export type ToolCheck = { ok: true; tool: ToolSpec; text: string } | Refused;

/** The name to echo in `advertised.rejected` for a tool of any shape (bounded, always a string). */
export function reportedName(value: unknown): string {
  const name = typeof value === 'object' && value !== null ? (value as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name.slice(0, 128) : '';
}

/** `reason` cut to {@link MAX_REASON_CHARS} characters. */
export function boundedReason(reason: string): string {
  return reason.length <= MAX_REASON_CHARS ? reason : `${reason.slice(0, MAX_REASON_CHARS - 1)}…`;
}

/**
 * Nesting depth of a JSON value, counting objects and arrays (a scalar is 0, `{}` is 1). Stops as soon
 * as `limit` is exceeded and returns `limit + 1`, so hostile input costs at most one bounded walk.
 */
export function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limit) return limit + 1;
    if (depth > max) max = depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return max;
}

/**
 * The cheap checks of one advertised tool, in order: shape (protocol `checkToolSpec`), name
 * `[A-Za-z0-9_-]{1,64}`, description length, `inputSchema.type === "object"`, schema depth, schema
 * JSON size, then the same three for an `outputSchema`. The first failure is the reason. `keepSchema`: return the schema object too.
 */
export function examineTool(value: unknown, limits: ToolLimits, keepSchema = true): ExaminedTool {
  const name = reportedName(value);
  const refuse = (reason: string): Refused => ({ ok: false, name, reason: boundedReason(reason) });
  const shape = checkToolSpec(value);
  if (shape !== undefined) return refuse(`tool is malformed: ${shape}`);
  const tool = value as ToolSpec;
  if (!NAME_PATTERN.test(tool.name)) return refuse(`tool name must match ${NAME_PATTERN.source}`);
  if (tool.description !== undefined && tool.description.length > limits.maxDescriptionChars) {
    return refuse(`description is longer than ${limits.maxDescriptionChars} characters`);
  }
  const schema = tool.inputSchema;
  if (schema.type !== 'object') return refuse('inputSchema must be an object schema ("type": "object")');
  if (jsonDepth(schema, limits.maxSchemaDepth) > limits.maxSchemaDepth) {
    return refuse(`inputSchema is nested deeper than ${limits.maxSchemaDepth} levels`);
  }
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > limits.maxSchemaBytes) return refuse(`inputSchema is ${bytes} bytes, over the limit of ${limits.maxSchemaBytes}`);
  const output = tool.outputSchema;
  if (output !== undefined) {
    if (output.type !== 'object') return refuse('outputSchema must be an object schema ("type": "object")');
    if (jsonDepth(output, limits.maxSchemaDepth) > limits.maxSchemaDepth) return refuse(`outputSchema is nested deeper than ${limits.maxSchemaDepth} levels`);
    const outBytes = Buffer.byteLength(JSON.stringify(output), 'utf8');
    if (outBytes > limits.maxSchemaBytes) return refuse(`outputSchema is ${outBytes} bytes, over the limit of ${limits.maxSchemaBytes}`);
  }
  const examined: ExaminedOk = { ok: true, name: tool.name, text };
  if (tool.description !== undefined) examined.description = tool.description;
  if (keepSchema) examined.schema = schema;
  if (tool.title !== undefined) examined.title = tool.title;
  if (tool.annotations !== undefined) examined.annotations = tool.annotations;
  if (output !== undefined) examined.outputSchema = output;
  return examined;
}

/** Specs made from an examined tool with its own schema object (one per examined tool: a cached advertise gives every host the same one). */
const specOf = new WeakMap<ExaminedOk, ToolSpec>();

/** The `ToolSpec` of an examined tool, given its parsed schema (the same object each time for the examined tool's own schema). */
export function toolSpecOf(examined: ExaminedOk, schema: Record<string, unknown>): ToolSpec {
  if (schema !== examined.schema) return makeSpec(examined, schema);
  let spec = specOf.get(examined);
  if (spec === undefined) specOf.set(examined, (spec = makeSpec(examined, schema)));
  return spec;
}

function makeSpec(examined: ExaminedOk, schema: Record<string, unknown>): ToolSpec {
  const spec: ToolSpec = { name: examined.name, inputSchema: schema };
  if (examined.title !== undefined) spec.title = examined.title;
  if (examined.description !== undefined) spec.description = examined.description;
  if (examined.annotations !== undefined) spec.annotations = examined.annotations;
  if (examined.outputSchema !== undefined) spec.outputSchema = examined.outputSchema;
  return spec;
}

/** The refusal of a schema that did not compile. */
export function compileRefusal(examined: ExaminedOk, reason: string): Refused {
  return { ok: false, name: examined.name, reason: boundedReason(`inputSchema does not compile: ${reason}`) };
}
