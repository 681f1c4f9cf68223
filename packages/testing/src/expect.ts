/**
 * Assertions on a capture that work in any test runner: a failed one throws node:assert's
 * `AssertionError` (vitest, jest, mocha and node:test all report it), its message holding the whole
 * capture in brief.
 */
import { AssertionError } from 'node:assert';
import type { Capture } from '@toolwire/protocol';
import type { ExecuteResult } from '@toolwire/server';

/** What {@link expectCapture} takes: an executor result, or a capture itself. */
export type CaptureLike = ExecuteResult | Capture;

const text = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');

function clip(value: string, max = 600): string {
  return value.length > max ? `${value.slice(0, max / 2)}…${value.slice(-max / 2)}` : value;
}

function matches(value: string, pattern: RegExp | string): boolean {
  return typeof pattern === 'string' ? value.includes(pattern) : pattern.test(value);
}

/** `pattern`, checked: a misused check is the test's bug, not a failed assertion. @throws TypeError */
function patternOf(check: string, value: RegExp | string): RegExp | string {
  if (typeof value !== 'string' && !(value instanceof RegExp)) throw new TypeError(`${check}: pass a RegExp or a string, got ${typeof value}`);
  return value;
}

/** Chained checks on one capture; each returns `this` and throws `AssertionError` on a mismatch (`TypeError` for an argument of the wrong type). */
export class CaptureAssertion {
  /** The capture under test (a declined or refused result has none: the first check throws). */
  readonly capture: Capture | undefined;
  readonly #described: string;

  constructor(result: CaptureLike) {
    if ('outcome' in result) {
      this.capture = result.outcome === 'completed' ? result.capture : undefined;
      this.#described = result.outcome === 'completed' ? '' : `${result.outcome}: ${result.reason}`;
    } else {
      this.capture = result;
      this.#described = '';
    }
  }

  #fail(what: string, actual: unknown, expected: unknown): never {
    const c = this.capture;
    const got =
      c === undefined
        ? `no capture (${this.#described})`
        : `exit ${c.exitCode}${c.failure ? ` (${c.failure})` : ''}; stdout: ${JSON.stringify(clip(text(c.stdout)))}; stderr: ${JSON.stringify(clip(text(c.stderr)))}`;
    throw new AssertionError({ message: `expected the capture ${what}; got ${got}`, actual, expected, operator: what });
  }

  #need(what: string): Capture {
    if (this.capture === undefined) this.#fail(what, this.#described, what);
    return this.capture;
  }

  /** The exit code is `code` (e.g. 69 host unavailable, 76 protocol violation, 124 deadline, 75 overloaded). */
  toExit(code: number): this {
    if (!Number.isInteger(code)) throw new TypeError(`toExit: pass an integer exit code, got ${typeof code === 'string' ? JSON.stringify(code) : String(code)}`);
    const c = this.#need(`to exit ${code}`);
    if (c.exitCode !== code) this.#fail(`to exit ${code}`, c.exitCode, code);
    return this;
  }

  /** stderr's last line is `toolwire: <reason>` and the reason matches `pattern` (a RegExp, or a substring). */
  withReason(pattern: RegExp | string): this {
    const p = patternOf('withReason', pattern);
    const c = this.#need(`to have a toolwire reason matching ${String(p)}`);
    const line = /(?:^|\n)toolwire: ([^\n]*)\n?$/.exec(text(c.stderr));
    if (line === null || !matches(line[1]!, p)) this.#fail(`to have a toolwire reason matching ${String(p)}`, line?.[1], String(p));
    return this;
  }

  /** The capture's `failure` kind is `kind` (e.g. `unavailable`, `protocol`, `timeout`, `overloaded`). */
  withFailure(kind: string): this {
    if (typeof kind !== 'string') throw new TypeError(`withFailure: pass a failure kind (a string), got ${typeof kind}`);
    const c = this.#need(`to have failure ${kind}`);
    if (c.failure !== kind) this.#fail(`to have failure ${kind}`, c.failure, kind);
    return this;
  }

  /** stdout (as UTF-8) matches `pattern` (a RegExp, or a substring). */
  withStdout(pattern: RegExp | string): this {
    const p = patternOf('withStdout', pattern);
    const c = this.#need(`to have stdout matching ${String(p)}`);
    if (!matches(text(c.stdout), p)) this.#fail(`to have stdout matching ${String(p)}`, text(c.stdout), String(p));
    return this;
  }

  /** stderr (as UTF-8) matches `pattern` (a RegExp, or a substring). */
  withStderr(pattern: RegExp | string): this {
    const p = patternOf('withStderr', pattern);
    const c = this.#need(`to have stderr matching ${String(p)}`);
    if (!matches(text(c.stderr), p)) this.#fail(`to have stderr matching ${String(p)}`, text(c.stderr), String(p));
    return this;
  }
}

/**
 * Assert on a call's outcome: `expectCapture(await server.call('alpha__echo')).toExit(69).withReason(/disconnected/)`.
 * @throws TypeError when `result` is neither an executor result nor a capture
 */
export function expectCapture(result: CaptureLike): CaptureAssertion {
  if (result === null || typeof result !== 'object' || !('outcome' in result || 'exitCode' in result)) {
    throw new TypeError('expectCapture: pass an ExecuteResult (await server.call(...)) or a Capture');
  }
  return new CaptureAssertion(result);
}
