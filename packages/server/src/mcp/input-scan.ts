/**
 * One pass over the text of an MCP POST body (a JSON-RPC message or a batch) that finds, in each
 * message's `params.arguments`, what `JSON.parse` would hand on changed:
 * - a key that appears twice in one object (`{"a":1,"a":2}`: the parse keeps the last, silently);
 *   also a repeated `params` key of the message or `arguments` key of its `params`;
 * - a `__proto__` key (the SDK's copy of `arguments` drops it: it sets the copy's prototype);
 * - a number whose value does not survive `JSON.parse` → `JSON.stringify` (`12345678901234567890`,
 *   `0.1000000000000000000001`, `1e400`, `1e-400`). Value, not spelling, counts: `1.0`, `1e2` and `-0`
 *   arrive as `1`, `100` and `0`, the same numbers.
 * Strings always survive (lone surrogates are escaped on the way out). It also finds arguments nested
 * deeper than a bound (`mcpMaxInputDepth`): the MCP SDK's own parse of them overflows the stack (an
 * HTTP 500 on the 2026-07-28 path), so the door refuses them before the SDK sees them.
 *
 * The text must be JSON that `JSON.parse` accepted (the door parses first); the scan does not judge
 * syntax. It costs one walk of the text: strings outside `arguments` are skipped with `indexOf`, and
 * keys are read only where they matter (whether a number survives: `json-number.ts`). Separate from
 * `worker/json-scan.ts`, which counts values of host frames and keeps no keys (its string skip is
 * shared).
 */
import { skipString } from '../worker/json-scan.js';
import { numberSurvives } from './json-number.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Keys of one object compared one by one; past this many, a set. */
const SMALL_OBJECT = 16;
/** Stands for a key of a message or of its params other than `params` / `arguments` (no copy of it is made). */
const OTHER_KEY = '\u0000';
/** Default `mcpMaxInputDepth`: levels of nesting in a call's `arguments` (the object itself is level 1). */
export const DEFAULT_MAX_INPUT_DEPTH = 1000;
/** A number text longer than this is shown cut in a reason. */
const SHOWN_NUMBER_CHARS = 40;

/** Why one message's arguments cannot reach its tool unchanged: the first finding, in text order. */
export interface InputIssue {
  /** Index of the message in a batch; 0 for a single message. */
  message: number;
  /** Path from `arguments`, e.g. `arguments.list[1].a` (`params` / `arguments` for a repeated one of those). */
  path: string;
  reason: string;
  /** The arguments are nested deeper than the bound: the door refuses the request itself (the SDK cannot parse it). */
  tooDeep?: true;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The value of the string at `[i, end)`: its text, decoded when it holds escapes. */
function stringAt(text: string, i: number, end: number): string {
  const raw = text.slice(i + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw;
}

/** A number text as a reason shows it. */
function shown(text: string): string {
  return text.length <= SHOWN_NUMBER_CHARS ? text : `${text.slice(0, SHOWN_NUMBER_CHARS)}…`;
}

/**
 * The state of one {@link scanInput}. A class rather than closures in the function: nothing is
 * allocated per scan but its arrays (and a key set per checked object).
 */
class Scan {
  readonly issues: InputIssue[] = [];
  /** Containers below `arguments` at most (`arguments` itself is level 1). */
  readonly maxDepth: number;
  /** Index of a message object among the open containers: 1 in a batch, else 0. */
  readonly base: number;
  /** Per open container: `{` or `[`. */
  readonly kinds: number[] = [];
  /** Per open container: the current key (object) or index (array). */
  readonly at: (string | number)[] = [];
  /**
   * Per open container: where its keys start in {@link keys} (`-1`: its keys are not checked for
   * repeats). An object under `arguments` past {@link SMALL_OBJECT} keys gets a set in {@link sets}.
   */
  readonly seen: number[] = [];
  /** The keys of the checked objects open, innermost last. */
  readonly keys: string[] = [];
  readonly sets: (Set<string> | undefined)[] = [];
  /** Index of the message being scanned (in a batch). */
  message = 0;
  /** The last message with a finding (only its first one counts). */
  flagged = -2;
  /** Inside the current message's `params.arguments`. */
  inArgs = false;

  constructor(
    readonly batch: boolean,
    readonly spans: Map<number, [number, number]> | undefined,
    maxDepth: number,
  ) {
    this.base = batch ? 1 : 0;
    this.maxDepth = maxDepth;
  }

  /** Whether the innermost open container is `params.arguments` of the current message or inside it. */
  underArguments(): boolean {
    const { at, base } = this;
    return this.kinds.length > base + 2 && at[base] === 'params' && at[base + 1] === 'arguments';
  }

  /** Whether a value starting (or ending) here is the value of a message's `params.arguments`. */
  argumentsValue(): boolean {
    const { at, base } = this;
    return this.kinds.length === base + 2 && this.kinds[base + 1] === OPEN_OBJECT && at[base] === 'params' && at[base + 1] === 'arguments';
  }

  /** Whether the keys of the object just opened are checked: a message, its params, and any object under arguments. */
  watched(): boolean {
    const depth = this.kinds.length;
    return depth === this.base + 1 || (depth === this.base + 2 && this.at[this.base] === 'params') || this.inArgs;
  }

  /** Whether `key` was seen before in the innermost open object (whose keys start at `from`); notes it. */
  repeated(key: string, from: number): boolean {
    const depth = this.kinds.length - 1;
    const keys = this.keys;
    let set = this.sets[depth];
    if (set === undefined && keys.length - from >= SMALL_OBJECT) {
      set = new Set(keys.slice(from));
      this.sets[depth] = set;
    }
    if (set !== undefined) {
      if (set.has(key)) return true;
      set.add(key);
      return false;
    }
    for (let k = from; k < keys.length; k++) if (keys[k] === key) return true;
    keys.push(key);
    return false;
  }

  path(): string {
    let out = 'arguments';
    for (let d = this.base + 2; d < this.at.length; d++) {
      const step = this.at[d]!;
      out += typeof step === 'number' ? `[${step}]` : `.${step}`;
    }
    return out;
  }

  span(start: number, end: number): void {
    const known = this.spans!.get(this.message);
    if (known === undefined) this.spans!.set(this.message, [start, end]);
    else if (end > 0) known[1] = end;
  }

  report(where: string, reason: string, tooDeep?: true): void {
    if (this.flagged === this.message) {
      // Too deep wins over an earlier finding of the same message: the SDK must not see it at all.
      if (tooDeep) this.issues[this.issues.length - 1] = { message: this.message, path: where, reason, tooDeep };
      return;
    }
    this.flagged = this.message;
    this.issues.push(tooDeep ? { message: this.message, path: where, reason, tooDeep } : { message: this.message, path: where, reason });
  }

  /** A key at `[i, end)` of the innermost open object. */
  key(text: string, i: number, end: number): void {
    const depth = this.kinds.length;
    if (depth > this.base + 2 && !this.inArgs) return;
    let key: string;
    if (this.inArgs) key = stringAt(text, i, end);
    else {
      // A message's or its params' own keys: only `params` and `arguments` matter, read without a copy when plain.
      const wanted = depth === this.base + 1 ? 'params' : 'arguments';
      const plain = end - i === wanted.length + 2 && text.startsWith(wanted, i + 1);
      key = plain ? wanted : text.lastIndexOf('\\', end) > i ? stringAt(text, i, end) : OTHER_KEY;
    }
    this.at[depth - 1] = key;
    const from = this.seen[depth - 1]!;
    if (from < 0 || this.flagged === this.message) return;
    if (this.repeated(key, from)) {
      const path = this.path();
      if (this.inArgs) this.report(path, `input key ${JSON.stringify(path)} appears more than once in one object (a JSON parser keeps only one); send it once`);
      else if (key === 'params' || key === 'arguments') {
        this.report(key, `${JSON.stringify(key)} appears more than once in one tools/call (a JSON parser keeps only one); send it once`);
      }
    } else if (this.inArgs && key === '__proto__') {
      const path = this.path();
      this.report(path, `input key ${JSON.stringify(path)} cannot be passed to a tool unchanged ("__proto__" is refused); rename it`);
    }
  }

  /** A number or literal at `[start, end)`; `c` its first character. */
  scalar(text: string, start: number, end: number, c: number): void {
    const value = this.argumentsValue();
    if (this.spans !== undefined && value) this.span(start, end);
    if (!(this.inArgs || value) || this.flagged === this.message || c === 0x74 || c === 0x66 || c === 0x6e) return;
    const number = text.slice(start, end);
    if (numberSurvives(number)) return;
    const path = this.path();
    this.report(path, `input number ${JSON.stringify(path)} (${shown(number)}) would reach the tool as ${JSON.stringify(Number(number))}; send it as a string`);
  }

  run(text: string): InputIssue[] {
    const { kinds, at, seen, spans } = this;
    const length = text.length;
    let expectKey = false;
    let i = 0;
    while (i < length) {
      const c = text.charCodeAt(i);
      if (isSpace(c) || c === COLON) {
        i++;
      } else if (c === QUOTE) {
        const end = skipString(text, i);
        if (expectKey) {
          expectKey = false;
          this.key(text, i, end);
        } else if (spans !== undefined && this.argumentsValue()) this.span(i, end);
        i = end;
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (this.batch && kinds.length === 1) this.message = at[0] as number;
        if (spans !== undefined && this.argumentsValue()) this.span(i, -1);
        kinds.push(c);
        at.push(0);
        this.inArgs = this.underArguments();
        // Levels below `arguments` (its own object is level 1): one past the bound is reported once.
        if (this.inArgs && kinds.length - this.base - 2 === this.maxDepth + 1) {
          this.report('arguments', `the input is nested deeper than ${this.maxDepth} levels (mcpMaxInputDepth); send it flatter`, true);
        }
        seen.push(c === OPEN_OBJECT && this.watched() ? this.keys.length : -1);
        this.sets.push(undefined);
        expectKey = c === OPEN_OBJECT;
        i++;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        kinds.pop();
        at.pop();
        const from = seen.pop()!;
        if (from >= 0) this.keys.length = from;
        this.sets.pop();
        this.inArgs = this.underArguments();
        expectKey = false;
        i++;
        if (spans !== undefined && this.argumentsValue()) this.span(-1, i);
      } else if (c === COMMA) {
        const top = kinds.length - 1;
        if (kinds[top] === OPEN_ARRAY) at[top] = (at[top] as number) + 1;
        else expectKey = true;
        i++;
      } else {
        // A number or a literal, up to the next delimiter.
        const start = i;
        i++;
        while (i < length) {
          const d = text.charCodeAt(i);
          if (isSpace(d) || d === COMMA || d === CLOSE_ARRAY || d === CLOSE_OBJECT) break;
          i++;
        }
        this.scalar(text, start, i, c);
      }
    }
    return this.issues;
  }
}

/**
 * Scan `text` (JSON that `JSON.parse` accepts) and give, for each message whose `params.arguments`
 * would reach the tool changed, the first finding. `batch`: the text is a JSON array of messages.
 * An empty array in the usual case. `spans`, when given, gets for each message (by index) where its
 * `arguments` text lies: from the start of the first such value to the end of the last (the same
 * value unless the member is repeated). `maxDepth`: levels of nesting allowed in `arguments` (default
 * {@link DEFAULT_MAX_INPUT_DEPTH}); a message past it gets a finding with `tooDeep`.
 */
export function scanInput(text: string, batch: boolean, spans?: Map<number, [start: number, end: number]>, maxDepth = DEFAULT_MAX_INPUT_DEPTH): InputIssue[] {
  return new Scan(batch, spans, maxDepth).run(text);
}
