/**
 * The server's info line per completed call (issue 16), made cheap: the fields shared by many calls
 * (`tool`, `host`, `agent`) are bound once in a child logger per combination (pino serializes a
 * child's bindings when the child is made, not per line), and the call's own fields are written
 * as JSON straight to the child's destination when it is a plain pino logger (`pino-direct.ts`:
 * the same line pino would write), else through `child.info`. Children are cached, at most
 * {@link MAX_CALL_LOGGERS} (the cache is emptied when full), the last one used looked up first. A
 * logger without `child` (not pino) gets every field on every line; nothing is done at all when
 * the logger says info is off (`isLevelEnabled`).
 */
import type { Logger } from '../options.js';
import { type DirectLine, directLine, quote } from './pino-direct.js';

/** Child loggers kept at most (one per tool/host/agent combination seen). */
export const MAX_CALL_LOGGERS = 1024;
/** The message of a call's line. */
const MESSAGE = 'call ended';
/** Every key {@link CallLines} writes beside the child's bindings. */
const KEYS = ['call', 'exitCode', 'ms', 'bytesOut', 'wire', 'node', 'failure', 'trace'] as const;

/** What this file uses of a logger beyond {@link Logger}: pino's `child` and `isLevelEnabled`, when present. */
interface Parent extends Logger {
  child?: (bindings: Record<string, string>) => Logger;
  isLevelEnabled?: (level: string) => boolean;
}

/** The fields of a call's line beside those bound in its child logger. */
export interface CallLineFields {
  call: string;
  exitCode: number;
  /** ms */
  ms: number;
  bytesOut: number;
  wire?: string;
  /** In a cluster: the node of the host that answered (DESIGN §10). */
  node?: string;
  failure?: string;
  trace?: string;
}

/** A cached child logger of one tool/host/agent combination. */
interface Child {
  tool: string;
  host: string | undefined;
  agent: string;
  logger: Logger;
  direct: DirectLine | undefined;
}

/** `fields` as the JSON of a line's body (`,"key":value` in {@link KEYS} order, absent ones left out), as pino writes them. */
function body(fields: CallLineFields): string {
  let out = `,"call":${quote(fields.call)},"exitCode":${fields.exitCode},"ms":${fields.ms},"bytesOut":${fields.bytesOut}`;
  if (fields.wire !== undefined) out += `,"wire":${quote(fields.wire)}`;
  if (fields.node !== undefined) out += `,"node":${quote(fields.node)}`;
  if (fields.failure !== undefined) out += `,"failure":${quote(fields.failure)}`;
  if (fields.trace !== undefined) out += `,"trace":${quote(fields.trace)}`;
  return out;
}

/** The per-call lines of one server. */
export class CallLines {
  readonly #logger: Parent;
  readonly #children = new Map<string, Child>();
  #last: Child | undefined;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** False when the logger says info is off (`isLevelEnabled`): {@link ended} would write nothing, so its fields need not be built. */
  get enabled(): boolean {
    const parent = this.#logger;
    return parent.isLevelEnabled === undefined || parent.isLevelEnabled('info');
  }

  /** Log `fields` as `call ended` with `tool`, `host` (when one answered) and `agent`. Never the input. */
  ended(tool: string, host: string | undefined, agent: string, fields: CallLineFields): void {
    const parent = this.#logger;
    if (parent.isLevelEnabled !== undefined && !parent.isLevelEnabled('info')) return;
    if (parent.child === undefined) {
      parent.info({ ...fields, tool, host, agent }, MESSAGE);
      return;
    }
    let child = this.#last;
    if (child === undefined || child.tool !== tool || child.host !== host || child.agent !== agent) {
      child = this.#child(parent, tool, host, agent);
      this.#last = child;
    }
    // Finite integers and strings only (exit code, ms, bytes): the body is what pino would make of them.
    if (child.direct !== undefined && Number.isFinite(fields.ms) && child.direct.write(body(fields))) return;
    child.logger.info(fields, MESSAGE);
  }

  /** The cached child of `tool`/`host`/`agent`, made when missing. */
  #child(parent: Parent, tool: string, host: string | undefined, agent: string): Child {
    const key = `${tool}\n${host ?? ''}\n${agent}`; // none of the three holds a newline
    let child = this.#children.get(key);
    if (child === undefined) {
      if (this.#children.size >= MAX_CALL_LOGGERS) this.#children.clear();
      const logger = parent.child!(host === undefined ? { tool, agent } : { tool, host, agent });
      child = { tool, host, agent, logger, direct: directLine(logger, KEYS, MESSAGE) };
      this.#children.set(key, child);
    }
    return child;
  }
}
