/**
 * A look at a frame's JSON text before `JSON.parse` builds it (offload worker only: it walks the
 * text in JavaScript). Two answers: how many JSON values the parse would build, and where the first
 * `keep` entries of a top-level `"tools"` array end, so an `advertise` of millions of entries is
 * parsed as one of `keep` (the rest only counted). Parsing millions of values costs more than time:
 * V8 grows native buffers for them that the allocator keeps after the thread is gone.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Where a top-level `"tools"` array was cut: `text[start, cut)` holds its first `kept` entries. */
export interface ToolsCut {
  /** Index of its `[`. */
  start: number;
  /** Index of the `,` after the last entry kept (or of its `]` when nothing was cut). */
  cut: number;
  /** Index just after its `]`. */
  end: number;
  /** Entries it holds in all, and of those kept. */
  count: number;
  kept: number;
}

/** The outcome of {@link scanFrame}; `tools`: each top-level `"tools"` array, in order. */
export type FrameScan = { ok: true; values: number; tools: ToolsCut[] } | { ok: false; values: number };

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Index just after the string whose opening quote is at `i` (`-1`: unterminated). Also the MCP door's input scan. */
export function skipString(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; k > i && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The key text of the string at `[i, end)`, decoded when it holds escapes. */
function keyOf(text: string, i: number, end: number): string {
  const raw = text.slice(i + 1, end - 1);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(text.slice(i, end)) as string;
  } catch {
    return raw;
  }
}

/**
 * From `i`, the start of an entry of a tools array being skipped, to that array's `]`: the index of
 * the `]` and how many entries began on the way (the one at `i` included).
 */
function skipEntries(text: string, i: number): { end: number; entries: number } {
  let depth = 0; // inside the array, relative to its entries
  let entries = 1;
  const length = text.length;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = skipString(text, i);
      if (end < 0) return { end: length, entries };
      i = end;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 0) return { end: i, entries };
      depth--;
    } else if (c === COMMA && depth === 0) entries++;
    i++;
  }
  return { end: length, entries };
}

/**
 * Count the values of `text` (every string, number, literal, object and array; keys not counted)
 * and cut each top-level `"tools"` array after its first `keep` entries: only those entries' values
 * count. `ok: false` as soon as more than `maxValues` values are counted. Malformed JSON is not
 * judged here: the scan counts what it sees, and `JSON.parse` reports the error.
 */
export function scanFrame(text: string, keep: number, maxValues: number): FrameScan {
  const tools: ToolsCut[] = [];
  const stack: number[] = []; // the open containers, `{` or `[`
  let values = 0;
  let expectKey = false; // the next string in this object is a key
  let topKey: string | undefined; // the last key of the top-level object
  let current: ToolsCut | undefined; // the tools array being scanned (its entries are at depth 2)
  let entries = 0;
  let lastBoundary = -1; // where the entries kept so far end: after `[`, or at the `,` after one
  const length = text.length;
  let i = 0;
  /** A value starts at depth `depth`; false when it is one too many. */
  const value = (depth: number): boolean => {
    if (current !== undefined && depth === 2) entries++;
    return ++values <= maxValues;
  };
  while (i < length) {
    const c = text.charCodeAt(i);
    const depth = stack.length;
    if (current !== undefined && depth === 2 && entries === keep && !isSpace(c) && c !== COMMA && c !== COLON && c !== CLOSE_ARRAY && c !== CLOSE_OBJECT) {
      // The first entry past those kept: the rest of the array is only counted, up to its `]`.
      current.cut = lastBoundary;
      current.kept = keep;
      const skipped = skipEntries(text, i);
      entries += skipped.entries;
      i = skipped.end;
      continue;
    }
    if (isSpace(c) || c === COLON) {
      i++;
    } else if (c === QUOTE) {
      const end = skipString(text, i);
      if (end < 0) break;
      if (expectKey && stack[depth - 1] === OPEN_OBJECT) {
        if (depth === 1) topKey = keyOf(text, i, end);
        expectKey = false;
      } else if (!value(depth)) {
        return { ok: false, values };
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (!value(depth)) return { ok: false, values };
      if (c === OPEN_ARRAY && depth === 1 && topKey === 'tools' && current === undefined) {
        current = { start: i, cut: -1, end: -1, count: 0, kept: 0 };
        entries = 0;
        lastBoundary = i + 1;
      }
      stack.push(c);
      expectKey = c === OPEN_OBJECT;
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop();
      if (current !== undefined && stack.length === 1) {
        if (current.cut < 0) {
          current.cut = i;
          current.kept = entries;
        }
        current.end = i + 1;
        current.count = entries;
        tools.push(current);
        current = undefined;
      }
      expectKey = false;
      i++;
    } else if (c === COMMA) {
      if (current !== undefined && depth === 2) lastBoundary = i;
      expectKey = stack[depth - 1] === OPEN_OBJECT;
      i++;
    } else {
      // A number or a literal: up to the next delimiter.
      if (!value(depth)) return { ok: false, values };
      i++;
      while (i < length) {
        const d = text.charCodeAt(i);
        if (isSpace(d) || d === COMMA || d === COLON || d === CLOSE_ARRAY || d === CLOSE_OBJECT) break;
        i++;
      }
    }
  }
  return { ok: true, values, tools };
}

/**
 * `text` with every cut tools array holding only its kept entries, and the number of
 * entries left out of the last one (the array `JSON.parse` keeps when a key repeats).
 */
export function cutTools(text: string, tools: readonly ToolsCut[]): { text: string; left: number } {
  let out = text;
  for (let k = tools.length - 1; k >= 0; k--) {
    const t = tools[k]!;
    if (t.cut < t.end - 1) out = `${out.slice(0, t.cut)}]${out.slice(t.end)}`;
  }
  const last = tools[tools.length - 1];
  return { text: out, left: last === undefined ? 0 : last.count - last.kept };
}
