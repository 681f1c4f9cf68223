/**
 * The server's call line (issue 16) written straight to a plain pino logger's destination is the
 * line pino itself writes for the same fields; any pino option that would change the line sends it
 * through pino instead (and it still follows that option).
 */
import { describe, expect, it } from 'vitest';
import { pino, type LoggerOptions } from 'pino';
import { CallLines, type CallLineFields } from '../src/observe/call-lines.js';

/** A pino logger at info writing its lines to an array, with a fixed time. */
function capture(options: LoggerOptions = {}): { lines: string[]; logger: pino.Logger } {
  const lines: string[] = [];
  const logger = pino({ level: 'info', timestamp: () => ',"time":1', ...options }, { write: (line: string) => void lines.push(line) });
  return { lines, logger };
}

const FULL: CallLineFields = { call: 'id-1', exitCode: 3, ms: 12, bytesOut: 40, wire: 'w"1', node: 'n\\1', failure: 'host_error', trace: 'ab'.repeat(16) };
const SHORT: CallLineFields = { call: 'id-2', exitCode: 0, ms: 0, bytesOut: 0 };

describe('CallLines: the server call line', () => {
  it('writes the same bytes as pino would for the same child bindings and fields, with and without the optional ones', () => {
    const direct = capture();
    const through = capture();
    const lines = new CallLines(direct.logger);
    for (const fields of [FULL, SHORT]) {
      lines.ended('h0__echo', 'h0', 'bench', fields);
      through.logger.child({ tool: 'h0__echo', host: 'h0', agent: 'bench' }).info(fields, 'call ended');
    }
    lines.ended('local', undefined, 'a"b', SHORT);
    through.logger.child({ tool: 'local', agent: 'a"b' }).info(SHORT, 'call ended');
    expect(direct.lines).toEqual(through.lines);
    expect(JSON.parse(direct.lines[0]!)).toMatchObject({ level: 30, time: 1, tool: 'h0__echo', host: 'h0', agent: 'bench', ...FULL, msg: 'call ended' });
  });

  it('keeps the level formatter, base, message key and setBindings of the logger', () => {
    const options: LoggerOptions = { base: { service: 's' }, messageKey: 'message', formatters: { level: (label) => ({ level: label }) } };
    const direct = capture(options);
    const through = capture(options);
    new CallLines(direct.logger).ended('t', 'h', 'a', SHORT);
    through.logger.child({ tool: 't', host: 'h', agent: 'a' }).info(SHORT, 'call ended');
    expect(direct.lines).toEqual(through.lines);
    expect(JSON.parse(direct.lines[0]!)).toMatchObject({ level: 'info', service: 's', message: 'call ended' });
  });

  it('goes through pino when an option changes the line: redaction, a serializer, a mixin, formatters.log, a hook', () => {
    const cases: [LoggerOptions, (line: Record<string, unknown>) => void][] = [
      [{ redact: ['call'] }, (l) => expect(l.call).toBe('[Redacted]')],
      [{ redact: ['*'] }, (l) => expect(l.exitCode).toBe('[Redacted]')],
      [{ serializers: { trace: () => 'hidden' } }, (l) => expect(l.trace).toBe('hidden')],
      [{ mixin: () => ({ extra: 1 }) }, (l) => expect(l.extra).toBe(1)],
      [{ formatters: { log: (o) => ({ ...o, logged: true }) } }, (l) => expect(l.logged).toBe(true)],
      [{ hooks: { streamWrite: (s) => s.replace('"call ended"', '"hooked"') } }, (l) => expect(l.msg).toBe('hooked')],
      [{ msgPrefix: 'p: ' }, (l) => expect(l.msg).toBe('p: call ended')],
    ];
    for (const [options, check] of cases) {
      const { lines, logger } = capture(options);
      new CallLines(logger).ended('t', 'h', 'a', FULL);
      expect(lines).toHaveLength(1);
      check(JSON.parse(lines[0]!) as Record<string, unknown>);
    }
  });

  it('writes nothing when info is off, and follows a level changed later', () => {
    const { lines, logger } = capture();
    const callLines = new CallLines(logger);
    logger.level = 'warn';
    callLines.ended('t', 'h', 'a', SHORT);
    expect(lines).toEqual([]);
    logger.level = 'info';
    callLines.ended('t', 'h', 'a', SHORT);
    expect(lines).toHaveLength(1);
  });
});
