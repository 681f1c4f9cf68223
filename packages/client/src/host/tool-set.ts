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
  const { command, cwd, env, envPassthrough, timeoutMs, maxConcurrency } = spec;
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
  if (maxConcurrency !== undefined && (!Number.isInteger(maxConcurrency) || maxConcurrency <= 0)) {
    throw new RangeError(`tool ${name}: maxConcurrency must be a positive integer, got ${maxConcurrency}`);
  }
}

/** What {@link ToolSet.replaceCommands} changed: tool names, in the new set's order (removed: the old order). */
export interface ToolSetChange {
  /** Subprocess tools that were not registered before. */
  added: string[];
  /** Subprocess tools that are gone. */
  removed: string[];
  /** Subprocess tools whose definition (schema, description, command, cwd, env, timeout, max concurrency) differs. */
  changed: string[];
}

interface Entry {
  spec: ToolSpec;
  run: RunnableTool;
}

/**
 * Tools by name, in registration order; names are unique. A lookup hands out the entry's
 * `RunnableTool` itself, and entries are replaced, never mutated, so a call that started keeps the
 * definition it started with.
 */
export class ToolSet {
  #tools = new Map<string, Entry>();

  /** Register an in-process tool. @throws TypeError on a bad name, spec or handler, or a duplicate name. */
  addHandler(name: string, spec: InProcessToolSpec, handler: ToolHandler): void {
    checkFace(name, spec);
    if (typeof handler !== 'function') throw new TypeError(`tool ${name}: handler must be a function`);
    this.#add(name, spec, { kind: 'handler', name, handler });
  }

  /** Register a subprocess tool. @throws TypeError/RangeError on a bad spec, TypeError on a duplicate name. */
  addCommand(name: string, spec: CommandSpec): void {
    const entry = commandEntry(name, spec);
    if (this.#tools.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is already registered`);
    this.#tools.set(name, entry);
  }

  /** Unregister `name` (either kind). @returns whether it was registered */
  remove(name: string): boolean {
    return this.#tools.delete(name);
  }

  /**
   * Make the subprocess tools exactly `tools` (in-process tools stay): a tool kept in place keeps
   * its position, new ones go last. All or nothing: every spec is checked before anything changes.
   * @throws TypeError/RangeError on a bad spec, a name given twice, or a name an in-process tool has
   */
  replaceCommands(tools: readonly { name: string; spec: CommandSpec }[]): ToolSetChange {
    const next = new Map<string, Entry>();
    for (const { name, spec } of tools) {
      const entry = commandEntry(name, spec);
      if (next.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is given more than once`);
      if (this.#tools.get(name)?.run.kind === 'handler') throw new TypeError(`tool ${JSON.stringify(name)} is already registered as an in-process tool`);
      next.set(name, entry);
    }
    const change: ToolSetChange = { added: [], removed: [], changed: [] };
    const merged = new Map<string, Entry>();
    for (const [name, old] of this.#tools) {
      if (old.run.kind === 'handler') merged.set(name, old);
      else {
        const fresh = next.get(name);
        if (fresh === undefined) change.removed.push(name);
        else if (sameDefinition(old, fresh)) merged.set(name, old);
        else {
          merged.set(name, fresh);
          change.changed.push(name);
        }
      }
    }
    for (const [name, fresh] of next) {
      if (merged.has(name)) continue;
      merged.set(name, fresh);
      change.added.push(name);
    }
    this.#tools = merged;
    return change;
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
    this.#tools.set(name, { spec: advertised(name, face), run });
  }
}

function advertised(name: string, face: InProcessToolSpec): ToolSpec {
  const spec: ToolSpec = { name, inputSchema: face.inputSchema };
  if (face.description !== undefined) spec.description = face.description;
  return spec;
}

/** A checked subprocess tool entry, with its own copy of the spec. @throws TypeError/RangeError on a bad name or spec */
function commandEntry(name: string, spec: CommandSpec): Entry {
  checkFace(name, spec);
  checkCommand(name, spec);
  const command: CommandSpec = { inputSchema: spec.inputSchema, command: [...spec.command] };
  if (spec.description !== undefined) command.description = spec.description;
  if (spec.cwd !== undefined) command.cwd = spec.cwd;
  if (spec.env !== undefined) command.env = { ...spec.env };
  if (spec.envPassthrough !== undefined) command.envPassthrough = [...spec.envPassthrough];
  if (spec.timeoutMs !== undefined) command.timeoutMs = spec.timeoutMs;
  if (spec.maxConcurrency !== undefined) command.maxConcurrency = spec.maxConcurrency;
  return { spec: advertised(name, spec), run: { kind: 'command', name, command } };
}

/** Same advertised face and same command definition (compared as JSON: specs are plain data). */
function sameDefinition(a: Entry, b: Entry): boolean {
  if (a.run.kind !== 'command' || b.run.kind !== 'command') return false;
  return JSON.stringify([a.spec, a.run.command]) === JSON.stringify([b.spec, b.run.command]);
}
