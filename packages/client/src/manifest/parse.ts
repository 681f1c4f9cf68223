/**
 * Manifest parsing (DESIGN §7): the basis shape and the yog list form, validated by hand with the
 * key path in every error, `${VAR}` expanded in command, cwd and env values.
 */
import { isAbsolute, resolve } from 'node:path';
import { NAME_PATTERN } from '@toolwire/protocol';
import type { CommandToolSpec, InProcessToolSpec } from '../types.js';
import { ManifestError } from './errors.js';
import { expandVars } from './expand.js';

/** Inputs of {@link parseManifest} besides the document. */
export interface ParseManifestOptions {
  /** Directory a relative `cwd` is resolved against (the manifest's directory). */
  baseDir: string;
  /** Variables for `${VAR}` expansion. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

type Json = Record<string, unknown>;

/** `mcp_servers` (or `mcpServers`) is read by `loadMcpConfig`; the tool parser only lets it pass. */
const BASIS_TOP = ['schema', 'tools', 'mcp_servers', 'mcpServers'];
/** Tool metadata keys (protocol 2): `output_schema` and `outputSchema` are one key. */
const METADATA = ['title', 'annotations', 'output_schema', 'outputSchema'];
const BASIS_TOOL = ['description', 'input_schema', 'command', 'cwd', 'env', 'env_passthrough', 'timeout_ms', 'max_concurrency', ...METADATA];
const LIST_TOOL = ['name', 'description', 'input_schema', 'command', 'cwd', ...METADATA];
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function rejectUnknownKeys(value: Json, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new ManifestError(join(path, key), `is not a known key (allowed: ${allowed.join(', ')})`);
    }
  }
}

/**
 * Parse a manifest document (already JSON-parsed) into tool specs, in document order.
 *
 * Accepted shapes:
 * - basis: `{"schema": 1, "tools": {"<name>": {"description"?, "input_schema", "command": [argv],
 *   "cwd"?, "env"?, "env_passthrough"?, "timeout_ms"?, "max_concurrency"?, "title"?, "annotations"?,
 *   "output_schema"?}}, "mcp_servers"?: {...}}` (`tools` may be left out when `mcp_servers` is given;
 *   the servers are read by `loadMcpConfig`)
 * - yog list: `[{"name", "description"?, "input_schema", "command": [argv], "cwd"?}]`
 *
 * Names are `[A-Za-z0-9_-]{1,64}` and unique; `input_schema` is a JSON object with `type: "object"`
 * (omitted: `{"type": "object"}`, a tool that takes no input);
 * `command` a non-empty array of strings with a non-empty first element; `env` an object of string
 * values; `env_passthrough` an array of variable names (`[A-Za-z_][A-Za-z0-9_]*`); `timeout_ms` a positive integer (ms);
 * `max_concurrency` a positive integer (calls of the tool running at once). Unknown keys are rejected. `${VAR}` and
 * `${VAR:-default}` are expanded in each argv element, `cwd` and each `env` value; a relative `cwd`
 * is resolved against `baseDir`.
 *
 * @throws ManifestError whose message starts with the key path, e.g.
 *   `tools.read_file.command must be a non-empty array of strings`
 */
export function parseManifest(value: unknown, options: ParseManifestOptions): CommandToolSpec[] {
  const env = options.env ?? process.env;
  const tools: CommandToolSpec[] = [];
  if (Array.isArray(value)) {
    value.forEach((entry, i) => {
      const path = `[${i}]`;
      if (!isObject(entry)) throw new ManifestError(path, 'must be an object {name, description, input_schema, command, cwd?}');
      rejectUnknownKeys(entry, LIST_TOOL, path);
      if (typeof entry.name !== 'string') throw new ManifestError(join(path, 'name'), 'must be a string');
      tools.push(parseTool(entry.name, entry, path, options.baseDir, env));
    });
  } else if (isObject(value)) {
    rejectUnknownKeys(value, BASIS_TOP, '');
    if (value.schema !== 1) throw new ManifestError('schema', `must be 1, got ${JSON.stringify(value.schema)}`);
    const servers = value.mcp_servers !== undefined || value.mcpServers !== undefined;
    if (!(value.tools === undefined && servers) && !isObject(value.tools)) throw new ManifestError('tools', 'must be an object of tools by name');
    for (const [name, entry] of Object.entries(value.tools ?? {})) {
      const path = `tools.${name}`;
      if (!isObject(entry)) throw new ManifestError(path, 'must be an object {description, input_schema, command, ...}');
      rejectUnknownKeys(entry, BASIS_TOOL, path);
      tools.push(parseTool(name, entry, path, options.baseDir, env));
    }
  } else {
    throw new ManifestError('', 'manifest must be an object {"schema": 1, "tools": {...}} or an array of tools');
  }
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) throw new ManifestError('', `tool name ${JSON.stringify(tool.name)} appears more than once`);
    seen.add(tool.name);
  }
  return tools;
}

function parseTool(name: string, entry: Json, path: string, baseDir: string, env: NodeJS.ProcessEnv): CommandToolSpec {
  if (!NAME_PATTERN.test(name)) {
    throw new ManifestError(path, `has an invalid tool name ${JSON.stringify(name)} (must match [A-Za-z0-9_-]{1,64})`);
  }
  const spec: CommandToolSpec = {
    name,
    inputSchema: entry.input_schema === undefined ? { type: 'object' } : parseInputSchema(entry.input_schema, join(path, 'input_schema')),
    command: parseCommand(entry.command, join(path, 'command'), env),
  };
  if (entry.description !== undefined) {
    if (typeof entry.description !== 'string') throw new ManifestError(join(path, 'description'), 'must be a string');
    spec.description = entry.description;
  }
  parseMetadata(entry, path, spec);
  if (entry.cwd !== undefined) {
    if (typeof entry.cwd !== 'string' || entry.cwd.length === 0) throw new ManifestError(join(path, 'cwd'), 'must be a non-empty string');
    const cwd = expandVars(entry.cwd, env, join(path, 'cwd'));
    spec.cwd = isAbsolute(cwd) ? cwd : resolve(baseDir, cwd);
  }
  if (entry.env !== undefined) spec.env = parseEnv(entry.env, join(path, 'env'), env);
  if (entry.env_passthrough !== undefined) spec.envPassthrough = parseNames(entry.env_passthrough, join(path, 'env_passthrough'));
  if (entry.timeout_ms !== undefined) {
    const t = entry.timeout_ms;
    if (typeof t !== 'number' || !Number.isInteger(t) || t <= 0) throw new ManifestError(join(path, 'timeout_ms'), 'must be a positive integer (ms)');
    spec.timeoutMs = t;
  }
  if (entry.max_concurrency !== undefined) {
    const n = entry.max_concurrency;
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0)
      throw new ManifestError(join(path, 'max_concurrency'), 'must be a positive integer (calls running at once)');
    spec.maxConcurrency = n;
  }
  return spec;
}

/** `title` (≤ 256 characters), `annotations` (the four boolean hints), `output_schema`/`outputSchema` (an object schema). */
export function parseMetadata(entry: Json, path: string, spec: InProcessToolSpec): void {
  if (entry.title !== undefined) {
    if (typeof entry.title !== 'string' || entry.title.length > 256) throw new ManifestError(join(path, 'title'), 'must be a string of at most 256 characters');
    spec.title = entry.title;
  }
  if (entry.annotations !== undefined) {
    const a = entry.annotations;
    if (!isObject(a)) throw new ManifestError(join(path, 'annotations'), `must be an object of hints (${HINTS.join(', ')})`);
    rejectUnknownKeys(a, HINTS, join(path, 'annotations'));
    for (const [key, value] of Object.entries(a)) {
      if (typeof value !== 'boolean') throw new ManifestError(join(join(path, 'annotations'), key), 'must be true or false');
    }
    spec.annotations = a;
  }
  if (entry.output_schema !== undefined && entry.outputSchema !== undefined)
    throw new ManifestError(join(path, 'outputSchema'), 'is given twice (output_schema and outputSchema)');
  const output = entry.output_schema ?? entry.outputSchema;
  if (output !== undefined) spec.outputSchema = parseInputSchema(output, join(path, entry.output_schema !== undefined ? 'output_schema' : 'outputSchema'));
}

function parseInputSchema(value: unknown, path: string): Record<string, unknown> {
  if (!isObject(value)) throw new ManifestError(path, 'must be a JSON Schema object');
  if (value.type !== 'object') throw new ManifestError(join(path, 'type'), 'must be "object" (tool inputs and structured results are JSON objects)');
  return value;
}

function parseCommand(value: unknown, path: string, env: NodeJS.ProcessEnv): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((a) => typeof a === 'string')) {
    throw new ManifestError(path, 'must be a non-empty array of strings');
  }
  const argv = value.map((arg, i) => expandVars(arg, env, `${path}[${i}]`));
  if (argv[0] === '') throw new ManifestError(`${path}[0]`, 'must name a program (it is empty)');
  return argv;
}

function parseEnv(value: unknown, path: string, env: NodeJS.ProcessEnv): Record<string, string> {
  if (!isObject(value)) throw new ManifestError(path, 'must be an object of strings');
  const entries = Object.entries(value).map(([key, v]): [string, string] => {
    if (!ENV_NAME.test(key)) throw new ManifestError(join(path, key), 'is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)');
    if (typeof v !== 'string') throw new ManifestError(join(path, key), 'must be a string');
    return [key, expandVars(v, env, join(path, key))];
  });
  return Object.fromEntries(entries); // own properties only, even for a key like `__proto__`
}

function parseNames(value: unknown, path: string): string[] {
  if (!Array.isArray(value)) throw new ManifestError(path, 'must be an array of variable names');
  return value.map((name, i) => {
    if (typeof name !== 'string' || !ENV_NAME.test(name)) throw new ManifestError(`${path}[${i}]`, 'is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)');
    return name;
  });
}
