/**
 * The server's info line per completed call (issue 16), made cheap: the fields shared by many calls
 * (`tool`, `host`, `agent`) are bound once in a child logger per combination (pino serializes a
 * child's bindings when the child is made, not per line), so each line serializes only the call's
 * own fields. Children are cached, at most {@link MAX_CALL_LOGGERS} (the cache is emptied when
 * full). A logger without `child` (not pino) gets every field on every line; nothing is done at all
 * when the logger says info is off (`isLevelEnabled`).
 */
import type { Logger } from '../options.js';

/** Child loggers kept at most (one per tool/host/agent combination seen). */
export const MAX_CALL_LOGGERS = 1024;

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

/** The per-call lines of one server. */
export class CallLines {
  readonly #logger: Parent;
  readonly #children = new Map<string, Logger>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Log `fields` as `call ended` with `tool`, `host` (when one answered) and `agent`. Never the input. */
  ended(tool: string, host: string | undefined, agent: string, fields: CallLineFields): void {
    const parent = this.#logger;
    if (parent.isLevelEnabled !== undefined && !parent.isLevelEnabled('info')) return;
    if (parent.child === undefined) {
      parent.info({ ...fields, tool, host, agent }, 'call ended');
      return;
    }
    const key = `${tool}\n${host ?? ''}\n${agent}`; // none of the three holds a newline
    let child = this.#children.get(key);
    if (child === undefined) {
      if (this.#children.size >= MAX_CALL_LOGGERS) this.#children.clear();
      child = parent.child(host === undefined ? { tool, agent } : { tool, host, agent });
      this.#children.set(key, child);
    }
    child.info(fields, 'call ended');
  }
}
