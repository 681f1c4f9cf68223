/**
 * Issue 15 §3 at the raw-body level: the door's one-pass scan of a POST body (`input-scan.ts`,
 * `raw-body.ts`) against a slow reference reader written here (recursive descent, exact decimal
 * values with BigInt). Property: the scan refuses exactly the bodies whose `tools/call` arguments
 * `JSON.parse` → `JSON.stringify` would change (a repeated key, `__proto__`, a number whose value
 * changes), naming the same first path; every body it accepts parses to the value that was sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberSurvives, scanInput } from '../src/mcp/input-scan.js';
import { inputErrorsOf } from '../src/mcp/raw-body.js';

// ---- the reference reader ----------------------------------------------------------------------

/** A number's exact value: sign, digits without trailing zeros, power of ten; `0n` digits for zero. */
function exact(text: string): string {
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
function survives(text: string): boolean {
  const out = JSON.stringify(JSON.parse(text));
  return out !== 'null' && exact(out) === exact(text);
}

type Finding = { path: string; kind: 'repeated' | 'proto' | 'number' };
type Tree = { n: string } | string | boolean | null | Tree[] | { o: [string, Tree][] };

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
function canonical(tree: Tree): string {
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
function reference(args: string): { found?: Finding; tree: Tree } {
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
const keyText = fc
  .tuple(fc.constantFrom(...KEYS), fc.boolean())
  .map(([k, escape]) => (escape ? `"${[...k].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"` : JSON.stringify(k)));
const numberText = fc.oneof(
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
const argumentsText = fc.array(fc.tuple(keyText, space, valueText), { maxLength: 5 }).map((ms) => `{${ms.map(([k, w, v]) => `${w}${k}:${w}${v}`).join(',')}}`);

/** A tools/call message around `args`, with other members (and their numbers) around it. */
function call(id: number | string, args: string, noise = '"_meta":{"n":1e400,"k":1,"k":2}'): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{${noise},"name":"echo","arguments":${args}}}`;
}

// ---- properties ---------------------------------------------------------------------------------

describe('the door refuses exactly the arguments JSON.parse would change', () => {
  it('agrees with the reference reader on random argument texts: same verdict, same first path; accepted ones parse to the value sent', () => {
    fc.assert(
      fc.property(argumentsText, (args) => {
        const text = call(7, args);
        const body = JSON.parse(text) as { params: { arguments: unknown } };
        const ref = reference(args);
        const errors = inputErrorsOf(body, text);
        if (ref.found === undefined) {
          expect(errors).toBeUndefined();
          // What the tool gets (the parsed arguments, as the executor sends them on) has the value that was sent.
          expect(canonical(reference(JSON.stringify(body.params.arguments)).tree)).toBe(canonical(ref.tree));
        } else {
          expect(errors?.get(7)).toContain(JSON.stringify(ref.found.path));
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('finds nothing in any JSON.stringify output (what SDK clients send), batch or not', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { minLength: 1, maxLength: 3 }), fc.boolean(), (values, batch) => {
        const messages = values.map((v, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 't', arguments: { v } } }));
        const text = JSON.stringify(batch ? messages : messages[0]);
        expect(scanInput(text, batch)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('numberSurvives agrees with the exact check on random numbers', () => {
    fc.assert(
      fc.property(numberText, (n) => {
        expect(numberSurvives(n)).toBe(survives(n));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('each refused shape names its path and reason', () => {
  it.each([
    ['a repeated key', '{"a":1,"a":2}', 'arguments.a', 'appears more than once'],
    ['a repeated key spelled with an escape', '{"a":1,"\\u0061":2}', 'arguments.a', 'appears more than once'],
    ['a nested repeated key', '{"list":[{"k":[]},{"k":0,"k":0}]}', 'arguments.list[1].k', 'appears more than once'],
    ['a __proto__ key', '{"o":{"__proto__":{}}}', 'arguments.o.__proto__', '"__proto__" is refused'],
    ['an integer past 2^53', '{"id":9007199254740993}', 'arguments.id', '(9007199254740993) would reach the tool as 9007199254740992'],
    ['digits a double cannot hold', '{"x":[0.1000000000000000000001]}', 'arguments.x[0]', 'would reach the tool as 0.1'],
    ['a number too large', '{"x":1e400}', 'arguments.x', 'would reach the tool as null'],
    ['a number too small', '{"x":-1e-400}', 'arguments.x', 'would reach the tool as 0'],
  ])('%s', (_what, args, path, reason) => {
    const text = call('c', args, '"_meta":{}');
    const error = inputErrorsOf(JSON.parse(text), text)?.get('c');
    expect(error).toContain(JSON.stringify(path));
    expect(error).toContain(reason);
    expect(error).toMatch(/; (send it once|rename it|send it as a string)$/);
  });

  it('a repeated arguments or params member refuses the call', () => {
    const twice = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"arguments":{}}}';
    expect(inputErrorsOf(JSON.parse(twice), twice)?.get(1)).toMatch(/^"arguments" appears more than once in one tools\/call/);
    const params = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}},"params":{"name":"t"}}';
    expect(inputErrorsOf(JSON.parse(params), params)?.get(1)).toMatch(/^"params" appears more than once/);
  });

  it('accepts numbers of the same value in another spelling, and quirks outside the arguments', () => {
    const text = call(2, '{"a":1.0,"b":1e2,"c":-0,"d":0.50,"e":9007199254740992,"f":5e-324,"g":"\\u0061"}');
    expect(inputErrorsOf(JSON.parse(text), text)).toBeUndefined();
  });

  it('in a batch, refuses only the calls whose arguments would change, by their ids', () => {
    const text = `[1,${call('ok', '{"a":1}')},{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"arguments":{"a":1,"a":1}}},${call('bad', '{"a":[1e400]}')}]`;
    const errors = inputErrorsOf(JSON.parse(text), text);
    expect([...(errors ?? new Map<string, string>()).keys()]).toEqual(['bad']);
    expect(errors?.get('bad')).toContain('"arguments.a[0]"');
  });

  it('scans nothing when the body holds no tools/call', () => {
    const text = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{"a":1,"a":2}}}';
    expect(inputErrorsOf(JSON.parse(text), text)).toBeUndefined();
  });
});
