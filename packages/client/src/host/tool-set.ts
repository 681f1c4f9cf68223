/**
 * The tools one host advertises: in-process handlers and subprocess commands, checked when they are
 * registered (caller misuse throws at once).
 */
import { NAME_PATTERN, type ToolSpec } from '@toolwire/protocol';
import type { RunnableTool } from '../calls/call-session.js';
import type { CommandSpec, InProcessToolSpec, ToolHandler } from '../types.js';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkFace(name: string, spec: InProcessToolSpec): void {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new TypeError(`tool name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(name)}`);
  }
  if (!isPlainObject(spec)) throw new TypeError(`tool ${name}: spec must be an object`);
  if (!isPlainObject(spec.inputSchema) || spec.inputSchema.type !== 'object') {
    throw new TypeError(`tool ${name}: inputSchema must be a JSON Schema object with type "object"`);
  }
  if (spec.description !== undefined && typeof spec.description !== 'string') {
    throw new TypeError(`tool ${name}: description must be a string`);
  }
}

function checkCommand(name: string, spec: CommandSpec): void {
  const { command, cwd, env, envPassthrough, timeoutMs } = spec;
  if (!Array.isArray(command) || command.length === 0 || !command.every((a) => typeof a === 'string') || command[0] === '') {
    throw new TypeError(`tool ${name}: command must be a non-empty array of strings`);
  }
  if (cwd !== undefined && (typeof cwd !== 'string' || cwd.length === 0)) throw new TypeError(`tool ${name}: cwd must be a non-empty string`);
  if (env !== undefined && (!isPlainObject(env) || !Object.values(env).every((v) => typeof v === 'string'))) {
    throw new TypeError(`tool ${name}: env must be an object of strings`);
  }
  if (envPassthrough !== undefined && (!Array.isArray(envPassthrough) || !envPassthrough.every((n) => typeof n === 'string'))) {
    throw new TypeError(`tool ${name}: envPassthrough must be an array of variable names`);
  }
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs <= 0)) {
    throw new RangeError(`tool ${name}: timeoutMs must be a positive integer (ms), got ${timeoutMs}`);
  }
}

/** Tools by name, in registration order; names are unique. */
export class ToolSet {
  readonly #tools = new Map<string, { spec: ToolSpec; run: RunnableTool }>();

  /** Register an in-process tool. @throws TypeError on a bad name, spec or handler, or a duplicate name. */
  addHandler(name: string, spec: InProcessToolSpec, handler: ToolHandler): void {
    checkFace(name, spec);
    if (typeof handler !== 'function') throw new TypeError(`tool ${name}: handler must be a function`);
    this.#add(name, spec, { kind: 'handler', name, handler });
  }

  /** Register a subprocess tool. @throws TypeError/RangeError on a bad spec, TypeError on a duplicate name. */
  addCommand(name: string, spec: CommandSpec): void {
    checkFace(name, spec);
    checkCommand(name, spec);
    const command: CommandSpec = { inputSchema: spec.inputSchema, command: [...spec.command] };
    if (spec.description !== undefined) command.description = spec.description;
    if (spec.cwd !== undefined) command.cwd = spec.cwd;
    if (spec.env !== undefined) command.env = { ...spec.env };
    if (spec.envPassthrough !== undefined) command.envPassthrough = [...spec.envPassthrough];
    if (spec.timeoutMs !== undefined) command.timeoutMs = spec.timeoutMs;
    this.#add(name, spec, { kind: 'command', name, command });
  }

  /** The tool registered as `name`. */
  get(name: string): RunnableTool | undefined {
    return this.#tools.get(name)?.run;
  }

  /** Every tool as advertised, in registration order. */
  specs(): ToolSpec[] {
    return [...this.#tools.values()].map((t) => t.spec);
  }

  #add(name: string, face: InProcessToolSpec, run: RunnableTool): void {
    if (this.#tools.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is already registered`);
    const spec: ToolSpec = { name, inputSchema: face.inputSchema };
    if (face.description !== undefined) spec.description = face.description;
    this.#tools.set(name, { spec, run });
  }
}
