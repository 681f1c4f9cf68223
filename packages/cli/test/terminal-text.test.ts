/**
 * What `toolwire tools` and `toolwire status` print comes partly from peers the README treats as
 * hostile: a tool host's advertised `title` and `description`, a caller's tool name (any string up to
 * the MCP body limit). Printed raw, a control character reaches the operator's terminal: ESC starts
 * a sequence that clears the screen, recolours or hides text, sets the title or (OSC 52, in many
 * terminals) writes the clipboard. Each such character is shown escaped instead, and a caller's tool
 * name is cut to a bounded length.
 */
import { describe, expect, it } from 'vitest';
import { type StatusAnswer, statusText } from '../src/commands/status-text.js';
import { toolLine } from '../src/commands/tools.js';
import { tokenCommand } from '../src/commands/token.js';
import { quotedArg } from '../src/terminal-text.js';
import { testIO } from './helpers/cli-io.js';

/** C0 and C1 controls and DEL; a single line has no newline or tab either. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const HOSTILE = 'plain \u001b[31mRED\u001b[0m \u001b]52;c;cHduZWQ=\u0007 \u009b2J end';

describe('text printed to a terminal', () => {
  it('toolwire tools: a title and description with control characters are shown escaped', () => {
    const line = toolLine({ name: 'esc__esc', title: 'T\u001b[2Jx', description: HOSTILE });
    expect(line.slice(0, -1)).not.toMatch(CONTROL);
    expect(line).toBe('esc__esc  T\\u001b[2Jx  plain \\u001b[31mRED\\u001b[0m \\u001b]52;c;cHduZWQ=\\u0007 \\u009b2J end\n');
  });

  it('a bidirectional override or isolate and a line or paragraph separator are shown escaped, so a peer cannot reorder or break what the line shows', () => {
    const spoof = 'safe\u202egnp.exe\u202c \u2066x\u2069 \u200e\u200f\u061c \u2028next\u2029end';
    const line = toolLine({ name: 'bidi__t', description: spoof });
    expect(line.slice(0, -1)).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(line).toBe('bidi__t  safe\\u202egnp.exe\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c \\u2028next\\u2029end\n');
  });

  it("toolwire status: a host's title and description and a caller's tool name are shown escaped; the name is cut", () => {
    const at = Date.now();
    const snapshot = {
      at,
      hosts: [
        {
          name: 'esc',
          remote: '127.0.0.1',
          protocol: 2,
          connectedAt: at,
          inFlight: 1,
          tools: [{ name: 'esc__esc', title: 'T\u001b[2Jx', description: HOSTILE, inputSchema: { type: 'object' } }],
        },
      ],
      calls: [{ id: 'c1', tool: `run\u001b]0;x\u0007${'y'.repeat(10_000)}`, host: 'esc', agent: 'cli', startedAt: at, bytes: 0 }],
      callsInFlight: 1,
      recent: [{ id: 'c2', tool: `\u001b[2J${'z'.repeat(1 << 20)}`, agent: 'cli', exitCode: 127, failure: 'not_found', startedAt: at, endedAt: at }],
    } as unknown as StatusAnswer;
    const text = statusText(snapshot);
    for (const line of text.split('\n')) expect(line).not.toMatch(CONTROL);
    expect(text).toContain('  esc__esc  "T\\u001b[2Jx"  plain \\u001b[31mRED');
    expect(text).toMatch(/ {2}c1 {2}run\\u001b\]0;x\\u0007y+… {2}on esc/);
    expect(text).toMatch(/ {2}c2 {2}\\u001b\[2Jz+… {2}exit 127/);
    for (const line of text.split('\n')) expect(line.length).toBeLessThan(400);
  });

  it('an error line quotes at most 80 characters of a bad argument, escaped, instead of echoing all of it', async () => {
    const huge = `${'x'.repeat(100_000)}!`;
    const io = testIO({ TOOLWIRE_HOME: '/nonexistent-toolwire-home' });
    expect(await tokenCommand(['add', 'caller', 'agent', '--grant', huge], io)).toBe(64);
    const line = io.err().split('\n')[0]!;
    expect(line).toContain(`got "${'x'.repeat(80)}…"`);
    expect(line.length).toBeLessThan(300);
    expect(quotedArg('a\u001b[2J\u202eb')).toBe('"a\\u001b[2J\\u202eb"');
    expect(quotedArg(undefined)).toBe('undefined');
  });
});
