/**
 * The tool registry: which host answers which exposed tool name (DESIGN §2, §6). Pure bookkeeping —
 * no sockets, no timers — so every naming and collision rule is testable on its own.
 */
import { type AdvertisedMessage, MAX_NAME_LENGTH, QUALIFIER, type ToolSpec } from '@toolwire/protocol';
import type { Naming } from '../options.js';
import type { InjectedTool } from '../seam.js';
import { reportedName, type ToolLimits, validateTool } from './validate-tool.js';

/** One accepted tool: the name callers use (`exposed`), the host that answers it, and its spec. */
export interface RegisteredTool {
  /** `<host>__<tool>` (naming `qualified`) or the tool's own name (naming `bare`). */
  exposed: string;
  host: string;
  /** The spec as the host advertised it; `spec.name` is the bare name sent in `call.tool`. */
  spec: ToolSpec;
}

/** Registry limits: the naming and tool limits of `ToolwireServerOptions` (defaults in `ServerDefaults`). */
export interface RegistryOptions extends ToolLimits {
  naming: Naming;
  /** Tools accepted per advertise (`maxToolsPerHost`). */
  maxToolsPerHost: number;
}

/** Outcome of {@link ToolRegistry.replace}: the `advertised` reply and whether `list()` changed. */
export interface ReplaceOutcome {
  advertised: AdvertisedMessage;
  changed: boolean;
}

/** The name callers see for `tool` of `host` under `naming`. */
export function exposedName(host: string, tool: string, naming: Naming): string {
  return naming === 'qualified' ? `${host}${QUALIFIER}${tool}` : tool;
}

function signature(tools: readonly RegisteredTool[]): string {
  return JSON.stringify(tools.map((t) => [t.exposed, t.spec.description ?? null, t.spec.inputSchema]));
}

/**
 * Tools per host, keyed by exposed name.
 *
 * Collision rule (DESIGN §2): an exposed name belongs to the first host that advertised it while it
 * stays connected; a later host advertising the same exposed name gets it in `advertised.rejected`.
 * With naming `qualified` collisions only arise from host names ending in `_` (e.g. `a_` + `__` + `b`
 * vs `a` + `__` + `_b`); the same rule applies. A host re-advertising its own names never collides
 * with itself. A name freed by a leaving host is not handed to a previously refused host until that
 * host advertises again.
 */
export class ToolRegistry {
  readonly #options: RegistryOptions;
  readonly #limits: ToolLimits;
  readonly #byName = new Map<string, RegisteredTool>();
  readonly #byHost = new Map<string, RegisteredTool[]>();
  #list: InjectedTool[] | undefined;

  constructor(options: RegistryOptions) {
    this.#options = options;
    this.#limits = {
      maxSchemaBytes: options.maxSchemaBytes,
      maxSchemaDepth: options.maxSchemaDepth,
      maxDescriptionChars: options.maxDescriptionChars,
    };
  }

  /**
   * Replace `host`'s tool set with the valid tools of `tools` (an `advertise` frame's items, unchecked).
   * Each tool is checked on its own (see `validateTool`); then, in order: duplicate name within this
   * advertise, exposed name longer than 64 characters, exposed name owned by another host, more than
   * `maxToolsPerHost` accepted. A refused tool is listed in `rejected` with the reason; the rest are
   * accepted.
   */
  replace(host: string, tools: readonly unknown[]): ReplaceOutcome {
    const accepted: RegisteredTool[] = [];
    const rejected: AdvertisedMessage['rejected'] = [];
    const seen = new Set<string>();
    for (const value of tools) {
      const check = validateTool(value, this.#limits);
      if (!check.ok) {
        rejected.push({ name: check.name, reason: check.reason });
        continue;
      }
      const name = check.tool.name;
      const exposed = exposedName(host, name, this.#options.naming);
      const owner = this.#byName.get(exposed);
      let reason: string | undefined;
      if (seen.has(name)) reason = 'duplicate tool name in this advertise';
      else if (exposed.length > MAX_NAME_LENGTH) reason = `exposed name "${exposed}" is longer than ${MAX_NAME_LENGTH} characters`;
      else if (owner !== undefined && owner.host !== host) {
        reason = `name "${exposed}" is already advertised by another host (naming ${this.#options.naming}: the first host keeps a name)`;
      } else if (accepted.length >= this.#options.maxToolsPerHost) {
        reason = `too many tools: at most ${this.#options.maxToolsPerHost} per host`;
      }
      seen.add(name);
      if (reason !== undefined) {
        rejected.push({ name: reportedName(value), reason });
        continue;
      }
      accepted.push({ exposed, host, spec: check.tool });
    }
    const before = this.#byHost.get(host) ?? [];
    const changed = signature(before) !== signature(accepted);
    for (const tool of before) this.#byName.delete(tool.exposed);
    for (const tool of accepted) this.#byName.set(tool.exposed, tool);
    this.#byHost.set(host, accepted);
    if (changed) this.#list = undefined;
    return {
      advertised: { type: 'advertised', accepted: accepted.map((t) => ({ name: t.spec.name, as: t.exposed })), rejected },
      changed,
    };
  }

  /** Forget every tool of `host`. Returns true when `list()` changed (the host had tools). */
  remove(host: string): boolean {
    const before = this.#byHost.get(host);
    if (before === undefined) return false;
    for (const tool of before) this.#byName.delete(tool.exposed);
    this.#byHost.delete(host);
    if (before.length === 0) return false;
    this.#list = undefined;
    return true;
  }

  /** The tool answering exposed name `name`, or `undefined` when none is advertised. */
  lookup(name: string): RegisteredTool | undefined {
    return this.#byName.get(name);
  }

  /** Exposed names of `host`'s accepted tools, in advertise order. */
  namesOf(host: string): string[] {
    return (this.#byHost.get(host) ?? []).map((t) => t.exposed);
  }

  /**
   * Every advertised tool as an `InjectedTool` (`name` = exposed name), hosts in first-advertise
   * order. The array and its entries are frozen and shared: the same array is returned until a
   * change. `inputSchema` is the advertised object itself (so `compileInputSchema` hits its cache).
   */
  list(): InjectedTool[] {
    if (this.#list === undefined) {
      const out: InjectedTool[] = [];
      for (const tools of this.#byHost.values()) {
        for (const t of tools) {
          const injected: InjectedTool = { name: t.exposed, inputSchema: t.spec.inputSchema };
          if (t.spec.description !== undefined) injected.description = t.spec.description;
          out.push(Object.freeze(injected));
        }
      }
      this.#list = Object.freeze(out) as InjectedTool[];
    }
    return this.#list;
  }
}
