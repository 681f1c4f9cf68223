/**
 * One pass over the text of an MCP POST body (a JSON-RPC message or a batch) that finds, in each
 * message's `params.arguments`, what `JSON.parse` would hand on changed:
 * - a key that appears twice in one object (`{"a":1,"a":2}`: the parse keeps the last, silently);
 *   also a repeated `params` key of the message or `arguments` key of its `params`;
 * - a `__proto__` key (the SDK's copy of `arguments` drops it: it sets the copy's prototype);
 * - a number whose value does not survive `JSON.parse` → `JSON.stringify` (`12345678901234567890`,
 *   `0.1000000000000000000001`, `1e400`, `1e-400`). Value, not spelling, counts: `1.0`, `1e2` and `-0`
 *   arrive as `1`, `100` and `0`, the same numbers.
 * Strings always survive (lone surrogates are escaped on the way out).
 *
 * The text must be JSON that `JSON.parse` accepted (the door parses first); the scan does not judge
 * syntax. It costs one walk of the text: strings outside `arguments` are skipped with `indexOf`, and
 * keys are read only where they matter. Separate from `worker/json-scan.ts`, which counts values of
 * host frames and keeps no keys.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** A number text longer than this is shown cut in a reason. */
const SHOWN_NUMBER_CHARS = 40;

/** Why one message's arguments cannot reach its tool unchanged: the first finding, in text order. */
export interface InputIssue {
  /** Index of the message in a batch; 0 for a single message. */
  message: number;
  /** Path from `arguments`, e.g. `arguments.list[1].a` (`params` / `arguments` for a repeated one of those). */
  path: string;
  reason: string;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Index just after the string whose opening quote is at `i` (the text is valid JSON). */
function skipString(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return text.length;
    let backslashes = 0;
    for (let k = q - 1; k > i && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The value of the string at `[i, end)`: its text, decoded when it holds escapes. */
function stringAt(text: string, i: number, end: number): string {
  const raw = text.slice(i + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw;
}

/** The value of a number text as `<sign><digits>e<exponent>` with no leading or trailing zero digits; `0` for zero (and -0). */
function decimal(text: string): string {
  let i = 0;
  const negative = text.charCodeAt(0) === 0x2d;
  if (negative) i++;
  let digits = '';
  let exponent = 0;
  let fraction = false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) fraction = true;
    else if (c === 0x65 || c === 0x45) {
      exponent += Number(text.slice(i + 1)); // "+21", "-7", "400"
      break;
    } else {
      digits += text[i];
      if (fraction) exponent--;
    }
  }
  let start = 0;
  while (start < digits.length && digits.charCodeAt(start) === 0x30) start++;
  let end = digits.length;
  while (end > start && digits.charCodeAt(end - 1) === 0x30) {
    end--;
    exponent++;
  }
  if (start === end) return '0'; // zero, -0 included
  return `${negative ? '-' : ''}${digits.slice(start, end)}e${exponent}`;
}

/**
 * Whether the JSON number `text` has the same value after `JSON.parse` → `JSON.stringify`. Up to 15
 * significant digits every decimal in the double range survives, so a short plain number needs no work.
 */
export function numberSurvives(text: string): boolean {
  if (text.length <= 15 && !/[eE]/.test(text)) return true;
  const value = Number(text);
  if (!Number.isFinite(value)) return false;
  return decimal(text) === decimal(String(value));
}

/** A number text as a reason shows it. */
function shown(text: string): string {
  return text.length <= SHOWN_NUMBER_CHARS ? text : `${text.slice(0, SHOWN_NUMBER_CHARS)}…`;
}

/**
 * Scan `text` (JSON that `JSON.parse` accepts) and give, for each message whose `params.arguments`
 * would reach the tool changed, the first finding. `batch`: the text is a JSON array of messages.
 * An empty array in the usual case. `spans`, when given, gets for each message (by index) where its
 * `arguments` text lies: from the start of the first such value to the end of the last (the same
 * value unless the member is repeated).
 */
export function scanInput(text: string, batch: boolean, spans?: Map<number, [start: number, end: number]>): InputIssue[] {
  const issues: InputIssue[] = [];
  const base = batch ? 1 : 0; // index of a message object among the open containers
  /** Per open container: `{` or `[`. */
  const kinds: number[] = [];
  /** Per open container: the current key (object) or index (array). */
  const at: (string | number)[] = [];
  /** Per open object whose keys are checked: the keys seen; `undefined` elsewhere. */
  const seen: (Set<string> | undefined)[] = [];
  let expectKey = false;
  let message = 0; // index of the message being scanned (in a batch)
  let flagged = -2; // the last message with a finding (only its first one counts)
  let inArgs = false; // inside the current message's params.arguments (depth > base + 2)
  const length = text.length;
  let i = 0;

  /** Whether the innermost open container is `params.arguments` of the current message or inside it. */
  const underArguments = (): boolean => kinds.length > base + 2 && at[base] === 'params' && at[base + 1] === 'arguments';
  const path = (): string => {
    let out = 'arguments';
    for (let d = base + 2; d < at.length; d++) {
      const step = at[d]!;
      out += typeof step === 'number' ? `[${step}]` : `.${step}`;
    }
    return out;
  };
  /** Whether a value starting (or ending) here is the value of a message's `params.arguments`. */
  const argumentsValue = (): boolean => kinds.length === base + 2 && kinds[base + 1] === OPEN_OBJECT && at[base] === 'params' && at[base + 1] === 'arguments';
  const span = (start: number, end: number): void => {
    const known = spans!.get(message);
    if (known === undefined) spans!.set(message, [start, end]);
    else if (end > 0) known[1] = end;
  };
  const report = (where: string, reason: string): void => {
    if (flagged === message) return;
    flagged = message;
    issues.push({ message, path: where, reason });
  };
  /** Whether the keys of the object just opened (`depth` containers open) are checked: a message, its params, and any object under arguments. */
  const watched = (depth: number): boolean => depth === base + 1 || (depth === base + 2 && at[base] === 'params') || inArgs;

  while (i < length) {
    const c = text.charCodeAt(i);
    if (isSpace(c) || c === COLON) {
      i++;
    } else if (c === QUOTE) {
      const end = skipString(text, i);
      const depth = kinds.length;
      if (!expectKey && spans !== undefined && argumentsValue()) span(i, end);
      if (expectKey) {
        expectKey = false;
        if (depth <= base + 2 || inArgs) {
          const key = stringAt(text, i, end);
          at[depth - 1] = key;
          const keys = seen[depth - 1];
          if (keys !== undefined && flagged !== message) {
            if (keys.has(key)) {
              if (inArgs) report(path(), `input key ${JSON.stringify(path())} appears more than once in one object (a JSON parser keeps only one); send it once`);
              else if (key === 'params' || key === 'arguments')
                report(key, `${JSON.stringify(key)} appears more than once in one tools/call (a JSON parser keeps only one); send it once`);
            } else if (inArgs && key === '__proto__') {
              report(path(), `input key ${JSON.stringify(path())} cannot be passed to a tool unchanged ("__proto__" is refused); rename it`);
            }
            keys.add(key);
          }
        }
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (batch && kinds.length === 1) message = at[0] as number;
      if (spans !== undefined && argumentsValue()) span(i, -1);
      kinds.push(c);
      at.push(0);
      inArgs = underArguments();
      seen.push(c === OPEN_OBJECT && watched(kinds.length) ? new Set() : undefined);
      expectKey = c === OPEN_OBJECT;
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      kinds.pop();
      at.pop();
      seen.pop();
      inArgs = underArguments();
      expectKey = false;
      i++;
      if (spans !== undefined && argumentsValue()) span(-1, i);
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
      if (spans !== undefined && argumentsValue()) span(start, i);
      if ((inArgs || argumentsValue()) && flagged !== message && c !== 0x74 && c !== 0x66 && c !== 0x6e) {
        const number = text.slice(start, i);
        if (!numberSurvives(number)) {
          report(path(), `input number ${JSON.stringify(path())} (${shown(number)}) would reach the tool as ${JSON.stringify(Number(number))}; send it as a string`);
        }
      }
    }
  }
  return issues;
}
