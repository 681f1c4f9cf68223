/**
 * JSON texts with the quirks `JSON.parse` hides (repeated keys, escaped key spellings, `__proto__`,
 * numbers a double cannot hold) and a slow reference reader of them (recursive descent, exact decimal
 * values with BigInt): what tests of the MCP door's input scan (issue 15 §3) compare against.
 */
import fc from 'fast-check';

// ---- the reference reader ----------------------------------------------------------------------

/** A number's exact value: sign, digits without trailing zeros, power of ten; `0n` digits for zero. */
export function exact(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) throw new Error(`not a JSON number: ${text}`);
  let digits = BigInt(m[2]! + (m[3] ?? ''));
  let power = BigInt(m[4] ?? '0') - BigInt((m[3] ?? '').length);
  if (digits === 0n) return '0';
  while (digits % 10n === 0n) {
    digits /= 10n;
    power++;
  }
  return `${m[1]}${digits}*10^${power}`;
}

/** Does the value survive `JSON.parse` → `JSON.stringify` (what the tool gets)? */
export function survives(text: string): boolean {
  const out = JSON.stringify(JSON.parse(text));
  return out !== 'null' && exact(out) === exact(text);
}

export type Finding = { path: string; kind: 'repeated' | 'proto' | 'number' };
export type Tree = { n: string } | string | boolean | null | Tree[] | { o: [string, Tree][] };

/** Read one JSON value at `s.i`; note the first finding under `arguments` (path given) in `s.found`. */
function read(s: { t: string; i: number; found?: Finding }, path: string | undefined): Tree {
  const ws = (): void => {
    while (/\s/.test(s.t[s.i] ?? '')) s.i++;
  };
  ws();
  const c = s.t[s.i]!;
  let value: Tree;
  if (c === '{') {
    s.i++;
    const members: [string, Tree][] = [];
    const keys = new Set<string>();
    ws();
    while (s.t[s.i] !== '}') {
      const key = read(s, undefined) as string;
      ws();
      s.i++; // ':'
      const child = path === undefined ? undefined : `${path}.${key}`;
      if (child !== undefined && s.found === undefined) {
        if (keys.has(key)) s.found = { path: child, kind: 'repeated' };
        else if (key === '__proto__') s.found = { path: child, kind: 'proto' };
      }
      keys.add(key);
      members.push([key, read(s, child)]);
      ws();
      if (s.t[s.i] === ',') s.i++;
      ws();
    }
    s.i++;
    value = { o: members };
  } else if (c === '[') {
    s.i++;
    const items: Tree[] = [];
    ws();
    while (s.t[s.i] !== ']') {
      items.push(read(s, path === undefined ? undefined : `${path}[${items.length}]`));
      ws();
      if (s.t[s.i] === ',') s.i++;
      ws();
    }
    s.i++;
    value = items;
  } else if (c === '"') {
    let j = s.i + 1;
    while (s.t[j] !== '"') j += s.t[j] === '\\' ? 2 : 1;
    value = JSON.parse(s.t.slice(s.i, j + 1)) as string;
    s.i = j + 1;
  } else {
    const m = /^(true|false|null|-?[\d.eE+-]+)/.exec(s.t.slice(s.i))!;
    s.i += m[0].length;
    if (m[0] === 'true' || m[0] === 'false' || m[0] === 'null') value = JSON.parse(m[0]) as boolean | null;
    else {
      value = { n: m[0] };
      if (path !== undefined && s.found === undefined && !survives(m[0])) s.found = { path, kind: 'number' };
    }
  }
  return value;
}

/** A tree as one canonical text: numbers by exact value, object members sorted (JSON objects are unordered). */
export function canonical(tree: Tree): string {
  if (tree === null || typeof tree !== 'object') return JSON.stringify(tree);
  if (Array.isArray(tree)) return `[${tree.map(canonical).join(',')}]`;
  if ('n' in tree) return exact(tree.n);
  const last = new Map(tree.o); // a repeated key: the last one, as JSON.parse keeps
  return `{${[...last.keys()]
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(last.get(k)!)}`)
    .join(',')}}`;
}

/** The reference reading of the arguments text `args` as sent in a tools/call. */
export function reference(args: string): { found?: Finding; tree: Tree } {
  const s: { t: string; i: number; found?: Finding } = { t: args, i: 0 };
  const tree = read(s, 'arguments');
  return { tree, ...(s.found && { found: s.found }) };
}

// ---- generators ----------------------------------------------------------------------------------

const SPACES = ['', ' ', '\n', '\t ', '\r\n  '];
const NUMBERS = [
  '0',
  '-0',
  '1',
  '-1',
  '1.0',
  '1.50',
  '0.1',
  '1e2',
  '1E+2',
  '-2.5e-3',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740993',
  '18446744073709551616',
  '12345678901234567890',
  '0.1000000000000000000001',
  '1e400',
  '-1e400',
  '1e-400',
  '5e-324',
  '2.4703282292062328e-324',
  '1.7976931348623157e308',
  '1.7976931348623159e308',
  '123456789012345.6',
  '0.30000000000000004',
  '100000000000000000000000',
  '1e21',
  '0e999',
  '0.000000000000000000000000001',
  '4.9e-324',
];
const KEYS = ['a', 'b', 'x.y', '', 'é', '__proto__', 'constructor', '1', '10', 'toString', '☃'];

/** A key as JSON text, sometimes with escapes (the same key, spelled differently). */
export const keyText = fc
  .tuple(fc.constantFrom(...KEYS), fc.boolean())
  .map(([k, escape]) => (escape ? `"${[...k].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"` : JSON.stringify(k)));
export const numberText = fc.oneof(
  fc.constantFrom(...NUMBERS),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.tuple(fc.integer({ min: 0, max: 999999 }), fc.integer({ min: -330, max: 330 })).map(([m, e]) => `${m}e${e}`),
);
const space = fc.constantFrom(...SPACES);
const { value: valueText } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText,
    fc.constantFrom('true', 'false', 'null', '"s"', '"a\\"b\\\\"', '"\\ud800"', '"{\\"a\\":1,\\"a\\":2}"'),
    fc.array(fc.tuple(space, tie('value')), { maxLength: 4 }).map((items) => `[${items.map(([w, v]) => w + v).join(',')}]`),
    fc.array(fc.tuple(keyText, space, tie('value')), { maxLength: 4 }).map((ms) => `{${ms.map(([k, w, v]) => `${w}${k}${w}:${v}`).join(',')}}`),
  ),
}));
/** Arguments: an object (what tools/call carries). */
export const argumentsText = fc
  .array(fc.tuple(keyText, space, valueText), { maxLength: 5 })
  .map((ms) => `{${ms.map(([k, w, v]) => `${w}${k}:${w}${v}`).join(',')}}`);
