/**
 * Checking one advertised tool (DESIGN §6: an invalid tool is rejected with a reason, the rest of the
 * advertise is accepted). Host input is untrusted: every check is bounded and none throws.
 */
import { checkToolSpec, NAME_PATTERN, type ToolSpec } from '@toolwire/protocol';
import { compileInputSchema } from './schema-cache.js';

/** Limits applied to one advertised tool. Sizes in bytes. */
export interface ToolLimits {
  /** Largest inputSchema, bytes of its JSON text (ToolwireServerOptions.maxSchemaBytes, default 65536). */
  maxSchemaBytes: number;
  /** Deepest inputSchema nesting of objects/arrays, the schema itself being depth 1 (default 32). */
  maxSchemaDepth: number;
  /** Longest description, characters (protocol `Defaults.maxDescriptionChars`, 4096). */
  maxDescriptionChars: number;
}

/** Outcome of checking one tool: the well-formed spec, or the name to report and why it was refused. */
export type ToolCheck = { ok: true; tool: ToolSpec } | { ok: false; name: string; reason: string };

/** The name to echo in `advertised.rejected` for a tool of any shape (bounded, always a string). */
export function reportedName(value: unknown): string {
  const name = typeof value === 'object' && value !== null ? (value as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name.slice(0, 128) : '';
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
 * Check one advertised tool, in order: shape (protocol `checkToolSpec`), name `[A-Za-z0-9_-]{1,64}`,
 * description length, `inputSchema.type === "object"`, schema JSON size, schema depth, and that ajv
 * compiles it (`compileInputSchema`, strict mode). The first failure is the reason.
 */
export function validateTool(value: unknown, limits: ToolLimits): ToolCheck {
  const name = reportedName(value);
  const shape = checkToolSpec(value);
  if (shape !== undefined) return { ok: false, name, reason: `tool is malformed: ${shape}` };
  const tool = value as ToolSpec;
  if (!NAME_PATTERN.test(tool.name)) {
    return { ok: false, name, reason: `tool name must match ${NAME_PATTERN.source}` };
  }
  if (tool.description !== undefined && tool.description.length > limits.maxDescriptionChars) {
    return { ok: false, name, reason: `description is longer than ${limits.maxDescriptionChars} characters` };
  }
  const schema = tool.inputSchema;
  if (schema.type !== 'object') {
    return { ok: false, name, reason: 'inputSchema must be an object schema ("type": "object")' };
  }
  const depth = jsonDepth(schema, limits.maxSchemaDepth);
  if (depth > limits.maxSchemaDepth) {
    return { ok: false, name, reason: `inputSchema is nested deeper than ${limits.maxSchemaDepth} levels` };
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema), 'utf8');
  if (bytes > limits.maxSchemaBytes) {
    return { ok: false, name, reason: `inputSchema is ${bytes} bytes, over the limit of ${limits.maxSchemaBytes}` };
  }
  const compiled = compileInputSchema(schema);
  if (!compiled.ok) return { ok: false, name, reason: `inputSchema does not compile: ${compiled.reason}` };
  return { ok: true, tool };
}
