/**
 * Count the newline bytes (0x0a) of a byte array: what a capture's truncation marker reports as
 * `lines total` (DESIGN §7). A stream far over its cap has every dropped byte counted, so this runs
 * over all of a long tool's output. `Buffer#indexOf` in a loop costs one native call per line; a
 * small WebAssembly SIMD loop (16 bytes per compare) counts a whole block in one call. Without
 * WebAssembly (e.g. `node --jitless`) the `indexOf` loop is used.
 */

const NEWLINE = 0x0a;

/**
 * Bytes handed to the WebAssembly counter per call: its memory (one 64 KiB page). A multiple of 64,
 * the bytes one iteration of its inner loop reads.
 */
const BLOCK_BYTES = 64 * 1024;
/** Shorter inputs are counted with `indexOf`: copying them into the module's memory would cost more. */
const MIN_WASM_BYTES = 1024;

/** Unsigned LEB128, as the WebAssembly binary format encodes integers. */
function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** Signed LEB128, the encoding of `i32.const` operands. */
function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

const simd = (op: number): number[] => [0xfd, ...leb(op)];
const section = (id: number, bytes: number[]): number[] => [id, ...leb(bytes.length), ...bytes];
const name = (s: string): number[] => [s.length, ...[...s].map((c) => c.charCodeAt(0))];

/** `acc = acc - (v128.load(ptr + offset) == nl)`: a lane that matched adds 1 (true is all ones). */
const countAt = (offset: number): number[] => [
  ...[0x20, 3], // local.get $acc
  ...[0x20, 0, ...simd(0x00), 0x00, ...leb(offset)], // local.get $ptr; v128.load align=1 offset
  ...[0x20, 4], // local.get $nl
  ...simd(0x23), // i8x16.eq
  ...simd(0x71), // i8x16.sub
  ...[0x21, 3], // local.set $acc
];

/** `$acc`'s 16 byte lanes summed and added to `$n`. */
const addLanes: number[] = [
  ...[0x20, 3, ...simd(0x7d), ...simd(0x7f), 0x21, 3], // acc = i32x4.extadd_pairwise_i16x8_u(i16x8.extadd_pairwise_i8x16_u(acc))
  ...[0x20, 2],
  ...[0, 1, 2, 3].flatMap((lane) => [0x20, 3, ...simd(0x1b), lane, 0x6a]), // + i32x4.extract_lane
  ...[0x21, 2],
];

/**
 * `(func (export "count") (param $ptr i32) (param $end i32) (result i32))`: newlines in memory
 * `[$ptr, $end)`, whose length is a multiple of 64. The inner loop adds 4 × 16 lanes per iteration
 * into byte counters, at most 63 iterations (252 per lane, under 256) before they are summed.
 */
const body: number[] = [
  ...[3, 1, 0x7f, 2, 0x7b, 1, 0x7f], // locals: $n i32; $acc $nl v128; $stop i32
  ...[0x41, ...sleb(NEWLINE), ...simd(0x0f), 0x21, 4], // nl = i8x16.splat(0x0a)
  ...[0x02, 0x40, 0x03, 0x40], // block; loop $outer
  ...[0x20, 0, 0x20, 1, 0x4f, 0x0d, 1], // br_if out (ptr >= end, unsigned)
  ...[0x20, 0, 0x41, ...sleb(63 * 64), 0x6a, 0x21, 5], // stop = ptr + 63 · 64
  ...[0x20, 5, 0x20, 1, 0x4b, 0x04, 0x40, 0x20, 1, 0x21, 5, 0x0b], // if stop > end: stop = end
  ...[...simd(0x0c), ...new Array<number>(16).fill(0), 0x21, 3], // acc = v128.const 0
  ...[0x03, 0x40], // loop $inner
  ...countAt(0),
  ...countAt(16),
  ...countAt(32),
  ...countAt(48),
  ...[0x20, 0, 0x41, ...sleb(64), 0x6a, 0x21, 0], // ptr += 64
  ...[0x20, 0, 0x20, 5, 0x49, 0x0d, 0, 0x0b], // br_if $inner (ptr < stop); end
  ...addLanes,
  ...[0x0c, 0, 0x0b, 0x0b], // br $outer; end loop; end block
  ...[0x20, 2, 0x0b], // n
];

const MODULE = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // \0asm, version 1
  ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7f]), // type: (i32, i32) -> i32
  ...section(3, [1, 0]), // function 0 has type 0
  ...section(5, [1, 0x00, 1]), // memory: 1 page, no maximum
  ...section(7, [2, ...name('mem'), 0x02, 0, ...name('count'), 0x00, 0]), // exports
  ...section(10, [1, ...leb(body.length), ...body]), // code
]);

interface Counter {
  memory: Uint8Array;
  count: (ptr: number, end: number) => number;
}

/** The compiled counter; `null` when WebAssembly is unavailable; `undefined` until first needed. */
let counter: Counter | null | undefined;

/** The part of the WebAssembly API used here (this package's TypeScript libs do not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: { mem: { buffer: ArrayBuffer }; count: Counter['count'] } };
}

function loadCounter(): Counter | null {
  const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (wasm === undefined) return null;
  try {
    const { exports } = new wasm.Instance(new wasm.Module(MODULE));
    return { memory: new Uint8Array(exports.mem.buffer), count: exports.count };
  } catch {
    return null;
  }
}

function countByIndexOf(bytes: Uint8Array): number {
  let n = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** Number of 0x0a bytes in `bytes`. */
export function countNewlines(bytes: Uint8Array): number {
  if (bytes.length < MIN_WASM_BYTES) return countByIndexOf(bytes);
  counter ??= loadCounter();
  if (counter === null) return countByIndexOf(bytes);
  const { memory, count } = counter;
  let n = 0;
  for (let at = 0; at < bytes.length; at += BLOCK_BYTES) {
    const block = bytes.subarray(at, at + BLOCK_BYTES);
    memory.set(block, 0);
    const end = (block.length + 63) & ~63; // zero padding: no newline
    memory.fill(0, block.length, end);
    n += count(0, end);
  }
  return n;
}
