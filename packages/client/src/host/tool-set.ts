/**
 * The tools one host advertises (DESIGN §7 "Tool sources"): its own in-process handlers and
 * subprocess commands, checked when they are registered (caller misuse throws at once), and the
 * tools of added sources (MCP servers) under one naming rule.
 */
import { NAME_PATTERN, type ToolSpec } from '@toolwire/protocol';
import { type CommandTool, CommandSource } from '../sources/command-source.js';
import { InProcessSource } from '../sources/in-process-source.js';
import type { SourceTool, ToolSource } from '../sources/source.js';
import type { CommandSpec, InProcessToolSpec, Logger, ToolHandler } from '../types.js';

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
  if (spec.title !== undefined && (typeof spec.title !== 'string' || spec.title.length > 256)) {
    throw new TypeError(`tool ${name}: title must be a string of at most 256 characters`);
  }
  if (spec.annotations !== undefined) {
    if (!isPlainObject(spec.annotations)) throw new TypeError(`tool ${name}: annotations must be an object of hints`);
    for (const [key, value] of Object.entries(spec.annotations)) {
      if (!HINTS.has(key) || typeof value !== 'boolean')
        throw new TypeError(`tool ${name}: annotations.${key} is not one of ${[...HINTS].join(', ')} with a boolean value`);
    }
  }
  if (spec.outputSchema !== undefined && (!isPlainObject(spec.outputSchema) || spec.outputSchema.type !== 'object')) {
    throw new TypeError(`tool ${name}: outputSchema must be a JSON Schema object with type "object"`);
  }
}

/** The tool annotation hints the wire carries. */
export const HINTS: ReadonlySet<string> = new Set(['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']);

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

/**
 * Tools by name: the host's own (in-process and subprocess, in registration order, checked when
 * registered — caller misuse throws), then the tools of each added source (MCP servers) in the order
 * the sources were added. Naming rule: a name is taken by the first tool in that order; a later tool
 * of an added source with a name already taken is refused, with a logged reason, and not advertised
 * (never a silent shadow) until the clash is gone. A lookup hands out the {@link SourceTool} itself,
 * and tools are replaced, never mutated, so a call that started keeps the definition it started with.
 */
export class ToolSet {
  #own = new Map<string, SourceTool>();
  readonly #handlers: InProcessSource = new InProcessSource((): SourceTool[] => this.#ofSource(this.#handlers));
  readonly #commands: CommandSource = new CommandSource((): SourceTool[] => this.#ofSource(this.#commands));
  readonly #sources: ToolSource[] = [];
  /** The tools of added sources that are advertised (no clash), by name; rebuilt on every change. */
  #added = new Map<string, SourceTool>();
  /** Refusals already logged, `<label>\0<name>`: a clash is logged once, not at every rebuild. */
  #refused = new Set<string>();
  readonly #logger: Logger | undefined;
  readonly #changed: () => void;

  /** @param changed runs when an added source's tools changed (the host re-advertises) */
  constructor(logger?: Logger, changed: () => void = () => {}) {
    this.#logger = logger;
    this.#changed = changed;
  }

  /** Register an in-process tool. @throws TypeError on a bad name, spec or handler, or a duplicate name. */
  addHandler(name: string, spec: InProcessToolSpec, handler: ToolHandler): void {
    checkFace(name, spec);
    if (typeof handler !== 'function') throw new TypeError(`tool ${name}: handler must be a function`);
    if (this.#own.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is already registered`);
    this.#own.set(name, this.#handlers.tool(name, advertised(name, spec), handler));
    this.#rebuild();
  }

  /** Register a subprocess tool. @throws TypeError/RangeError on a bad spec, TypeError on a duplicate name. */
  addCommand(name: string, spec: CommandSpec): void {
    const entry = this.#commandEntry(name, spec);
    if (this.#own.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is already registered`);
    this.#own.set(name, entry);
    this.#rebuild();
  }

  /** Unregister `name` (an own tool of either kind). @returns whether it was registered */
  remove(name: string): boolean {
    const removed = this.#own.delete(name);
    if (removed) this.#rebuild();
    return removed;
  }

  /**
   * Make the subprocess tools exactly `tools` (in-process tools stay): a tool kept in place keeps
   * its position, new ones go last. All or nothing: every spec is checked before anything changes.
   * @throws TypeError/RangeError on a bad spec, a name given twice, or a name an in-process tool has
   */
  replaceCommands(tools: readonly { name: string; spec: CommandSpec }[]): ToolSetChange {
    const next = new Map<string, CommandTool>();
    for (const { name, spec } of tools) {
      const entry = this.#commandEntry(name, spec);
      if (next.has(name)) throw new TypeError(`tool ${JSON.stringify(name)} is given more than once`);
      if (this.#own.get(name)?.source === this.#handlers) throw new TypeError(`tool ${JSON.stringify(name)} is already registered as an in-process tool`);
      next.set(name, entry);
    }
    const change: ToolSetChange = { added: [], removed: [], changed: [] };
    const merged = new Map<string, SourceTool>();
    for (const [name, old] of this.#own) {
      if (old.source !== this.#commands) merged.set(name, old);
      else {
        const fresh = next.get(name);
        if (fresh === undefined) change.removed.push(name);
        else if (sameDefinition(old as CommandTool, fresh)) merged.set(name, old);
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
    this.#own = merged;
    this.#rebuild();
    return change;
  }

  /**
   * Serve the tools of `source` after those already here; its changes re-advertise (`changed`).
   * @throws TypeError when it was added already
   */
  addSource(source: ToolSource): void {
    if (this.#sources.includes(source)) throw new TypeError(`tool source ${source.label} is already added`);
    this.#sources.push(source);
    source.onChange(() => {
      if (this.#sources.includes(source)) {
        this.#rebuild();
        this.#changed();
      }
    });
    this.#rebuild();
  }

  /** The added sources, in order. */
  sources(): readonly ToolSource[] {
    return this.#sources;
  }

  /** The tool advertised as `name`. */
  get(name: string): SourceTool | undefined {
    return this.#own.get(name) ?? this.#added.get(name);
  }

  /** Why `name`, a tool an added source withdrew (its MCP server died), is not served now; `undefined` when none says so. */
  withdrawn(name: string): string | undefined {
    for (const source of this.#sources) {
      const why = source.withdrawn?.(name);
      if (why !== undefined) return why;
    }
    return undefined;
  }

  /** Every tool as advertised: own tools in registration order, then each added source's. */
  specs(): ToolSpec[] {
    const specs: ToolSpec[] = [];
    for (const t of this.#own.values()) specs.push(t.spec);
    for (const t of this.#added.values()) specs.push(t.spec);
    return specs;
  }

  #ofSource(source: ToolSource): SourceTool[] {
    return [...this.#own.values()].filter((t) => t.source === source);
  }

  /** Recompute the added sources' advertised tools under the naming rule; log each new refusal once. */
  #rebuild(): void {
    if (this.#sources.length === 0) return;
    const added = new Map<string, SourceTool>();
    const refused = new Set<string>();
    for (const source of this.#sources) {
      for (const tool of source.tools()) {
        const holder = this.#own.get(tool.name) ?? added.get(tool.name);
        if (holder === undefined) {
          added.set(tool.name, tool);
          continue;
        }
        const key = `${source.label}\0${tool.name}`;
        refused.add(key);
        if (!this.#refused.has(key)) {
          this.#logger?.warn(
            { tool: tool.name, source: source.label, heldBy: holder.source.label },
            `toolwire: tool ${JSON.stringify(tool.name)} of ${source.label} refused: the name is already taken by a tool of ${holder.source.label} (give the server a prefix)`,
          );
        }
      }
    }
    this.#added = added;
    this.#refused = refused;
  }

  /** A checked subprocess tool, with its own copy of the spec. @throws TypeError/RangeError on a bad name or spec */
  #commandEntry(name: string, spec: CommandSpec): CommandTool {
    checkFace(name, spec);
    checkCommand(name, spec);
    const command: CommandSpec = { inputSchema: spec.inputSchema, command: [...spec.command] };
    if (spec.title !== undefined) command.title = spec.title;
    if (spec.description !== undefined) command.description = spec.description;
    if (spec.annotations !== undefined) command.annotations = { ...spec.annotations };
    if (spec.outputSchema !== undefined) command.outputSchema = spec.outputSchema;
    if (spec.cwd !== undefined) command.cwd = spec.cwd;
    if (spec.env !== undefined) command.env = { ...spec.env };
    if (spec.envPassthrough !== undefined) command.envPassthrough = [...spec.envPassthrough];
    if (spec.timeoutMs !== undefined) command.timeoutMs = spec.timeoutMs;
    if (spec.maxConcurrency !== undefined) command.maxConcurrency = spec.maxConcurrency;
    return this.#commands.tool(name, advertised(name, spec), command);
  }
}

function advertised(name: string, face: InProcessToolSpec): ToolSpec {
  const spec: ToolSpec = { name, inputSchema: face.inputSchema };
  if (face.title !== undefined) spec.title = face.title;
  if (face.description !== undefined) spec.description = face.description;
  if (face.annotations !== undefined) spec.annotations = { ...face.annotations };
  if (face.outputSchema !== undefined) spec.outputSchema = face.outputSchema;
  return spec;
}

/** `spec` as a protocol 1 connection carries it: without `title`, `annotations` and `outputSchema`. */
export function plainSpec(spec: ToolSpec): ToolSpec {
  if (spec.title === undefined && spec.annotations === undefined && spec.outputSchema === undefined) return spec;
  const plain: ToolSpec = { name: spec.name, inputSchema: spec.inputSchema };
  if (spec.description !== undefined) plain.description = spec.description;
  return plain;
}

/** Same advertised face and same command definition (compared as JSON: specs are plain data). */
function sameDefinition(a: CommandTool, b: CommandTool): boolean {
  return JSON.stringify([a.spec, a.command]) === JSON.stringify([b.spec, b.command]);
}
