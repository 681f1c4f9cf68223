/**
 * The tool registry: which host answers which exposed tool name (DESIGN §2, §6). Pure bookkeeping —
 * no sockets, no timers — so every naming and collision rule is testable on its own.
 */
import { type AdvertisedMessage, MAX_NAME_LENGTH, QUALIFIER, type ToolSpec } from '@toolwire/protocol';
import type { Naming } from '../options.js';
import type { InjectedTool } from '../seam.js';
import { internTool } from './intern.js';
import { type PreparedAdvertise, prepareAdvertise } from './prepare.js';
import { compileInputSchema } from './schema-cache.js';
import { compileRefusal, type ExaminedOk, examineTool, type ToolCheck, type ToolLimits, toolSpecOf } from './validate-tool.js';

/** One accepted tool: the name callers use (`exposed`), the host that answers it, and its spec. */
export interface RegisteredTool {
  /** `<host>__<tool>` (naming `qualified`) or the tool's own name (naming `bare`). */
  exposed: string;
  host: string;
  /** The spec as the host advertised it, shared with hosts that advertised an equal one (`intern.ts`); `spec.name` is the bare name sent in `call.tool`. */
  spec: ToolSpec;
  /** `spec.inputSchema` as JSON text. */
  text: string;
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

/**
 * Check one advertised tool completely and synchronously: the cheap checks (`examineTool`), then
 * compiling its schema on the event loop (`compileInputSchema`, strict mode). The first failure is
 * the reason. The budgeted, off-loop path of a host's advertise is `advertise-check.ts`.
 */
export function validateTool(value: unknown, limits: ToolLimits): ToolCheck {
  const examined = examineTool(value, limits);
  return examined.ok ? compileExamined(examined) : examined;
}

/** Compile an examined tool's schema on the event loop (cached). */
function compileExamined(examined: ExaminedOk): ToolCheck {
  const schema = examined.schema ?? (JSON.parse(examined.text) as Record<string, unknown>);
  const compiled = compileInputSchema(schema, examined.text);
  return compiled.ok ? { ok: true, tool: toolSpecOf(examined, schema), text: examined.text } : compileRefusal(examined, compiled.reason);
}

/** The reason of a tool refused because the host has `maxToolsPerHost` already. */
export function tooManyReason(maxToolsPerHost: number): string {
  return `too many tools: at most ${maxToolsPerHost} per host`;
}

/**
 * The `advertised` reply refusing every entry of `prepared` with `reason`, bounded like
 * {@link ToolRegistry.apply}: at most `maxToolsPerHost` listed, the rest counted.
 */
export function rejectAllReply(prepared: PreparedAdvertise, reason: string, maxToolsPerHost: number): AdvertisedMessage {
  const rejected = prepared.entries.slice(0, maxToolsPerHost).map((entry) => ({ name: entry.name, reason }));
  const more = prepared.entries.length - rejected.length + prepared.unexamined;
  return { type: 'advertised', accepted: [], rejected, ...(more > 0 && { moreRejected: more }) };
}

/** The name callers see for `tool` of `host` under `naming`. */
export function exposedName(host: string, tool: string, naming: Naming): string {
  return naming === 'qualified' ? `${host}${QUALIFIER}${tool}` : tool;
}

/** Same exposed names, descriptions, schema texts and metadata, in the same order (no big string is built). */
function sameTools(a: readonly RegisteredTool[], b: readonly RegisteredTool[]): boolean {
  if (a.length !== b.length) return false;
  return a.every(
    (t, i) => t.exposed === b[i]!.exposed && t.spec.description === b[i]!.spec.description && t.text === b[i]!.text && sameMetadata(t.spec, b[i]!.spec),
  );
}

/** Same `title`, `annotations` and `outputSchema` (each bounded by the advertise checks). */
function sameMetadata(a: RegisteredTool['spec'], b: RegisteredTool['spec']): boolean {
  if (a.title !== b.title) return false;
  if (a.annotations === undefined && b.annotations === undefined && a.outputSchema === undefined && b.outputSchema === undefined) return true;
  return JSON.stringify([a.annotations, a.outputSchema]) === JSON.stringify([b.annotations, b.outputSchema]);
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
   * Replace `host`'s tool set with the valid tools of `tools` (an `advertise` frame's items,
   * unchecked), checking each synchronously (`validateTool`); see {@link apply}. The first
   * `2 × maxToolsPerHost` entries are examined, the rest rejected unexamined.
   */
  replace(host: string, tools: readonly unknown[]): ReplaceOutcome {
    const prepared = prepareAdvertise(tools, { ...this.#limits, maxToolsPerHost: this.#options.maxToolsPerHost });
    const checks = prepared.entries.map((entry) => (entry.ok ? compileExamined(entry) : entry));
    return this.apply(host, checks, prepared.unexamined);
  }

  /**
   * Why `host` may not have a tool named `name` (its own name already in `seen` of this advertise,
   * an exposed name over 64 characters, or an exposed name another host owns), or `undefined`.
   */
  nameRefusal(host: string, name: string, seen: ReadonlySet<string>): string | undefined {
    const exposed = exposedName(host, name, this.#options.naming);
    const owner = this.#byName.get(exposed);
    if (seen.has(name)) return 'duplicate tool name in this advertise';
    if (exposed.length > MAX_NAME_LENGTH) return `exposed name "${exposed}" is longer than ${MAX_NAME_LENGTH} characters`;
    if (owner !== undefined && owner.host !== host) {
      return `name "${exposed}" is already advertised by another host (naming ${this.#options.naming}: the first host keeps a name)`;
    }
    return undefined;
  }

  /**
   * Replace `host`'s tool set with the accepted ones among `checks` (the examined entries of one
   * advertise, each checked). A refused check is listed with its reason; then, in order: duplicate
   * name within this advertise, exposed name longer than 64 characters, exposed name owned by
   * another host, more than `maxToolsPerHost` accepted. `unexamined` entries are rejected as too
   * many. The reply is bounded: `rejected` lists at most `maxToolsPerHost` entries and
   * `moreRejected` counts the rest (the unexamined ones are only counted).
   */
  apply(host: string, checks: readonly ToolCheck[], unexamined = 0): ReplaceOutcome {
    const max = this.#options.maxToolsPerHost;
    const accepted: RegisteredTool[] = [];
    const rejected: AdvertisedMessage['rejected'] = [];
    let moreRejected = unexamined;
    const reject = (name: string, reason: string): void => {
      if (rejected.length < max) rejected.push({ name, reason });
      else moreRejected++;
    };
    const seen = new Set<string>();
    for (const check of checks) {
      if (!check.ok) {
        reject(check.name, check.reason);
        continue;
      }
      const name = check.tool.name;
      const reason = this.nameRefusal(host, name, seen) ?? (accepted.length >= max ? tooManyReason(max) : undefined);
      seen.add(name);
      if (reason !== undefined) reject(name, reason);
      else {
        const { spec, text } = internTool(check.tool, check.text); // equal specs of many hosts: one object
        accepted.push({ exposed: exposedName(host, name, this.#options.naming), host, spec, text });
      }
    }
    const before = this.#byHost.get(host) ?? [];
    const changed = !sameTools(before, accepted);
    for (const tool of before) this.#byName.delete(tool.exposed);
    for (const tool of accepted) this.#byName.set(tool.exposed, tool);
    this.#byHost.set(host, accepted);
    if (changed) this.#list = undefined;
    const advertised: AdvertisedMessage = { type: 'advertised', accepted: accepted.map((t) => ({ name: t.spec.name, as: t.exposed })), rejected };
    if (moreRejected > 0) advertised.moreRejected = moreRejected;
    return { advertised, changed };
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

  /** `host`'s accepted tools, in advertise order (shared: do not mutate). */
  toolsOf(host: string): readonly RegisteredTool[] {
    return this.#byHost.get(host) ?? [];
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
          if (t.spec.title !== undefined) injected.title = t.spec.title;
          if (t.spec.annotations !== undefined) injected.annotations = t.spec.annotations;
          if (t.spec.outputSchema !== undefined) injected.outputSchema = t.spec.outputSchema;
          out.push(Object.freeze(injected));
        }
      }
      this.#list = Object.freeze(out) as InjectedTool[];
    }
    return this.#list;
  }
}
