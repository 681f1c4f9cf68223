/**
 * A caller may name any string as the tool (up to the MCP door's 4 MiB body). No exposed tool name
 * is longer than 64 characters, so such a call ends 127 at once — and what the server keeps of it
 * is bounded: the status board's recent calls, the `call ended` log line and its cached child logger
 * hold at most 80 characters of the name (then `…`), as the capture's reason already does.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ToolwireServer } from '../src/toolwire-server.js';

describe('a call to a very long tool name', () => {
  it('is answered 127, and the status board and the call line keep at most 80 characters of the name', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const server = new ToolwireServer({ callers: [{ name: 'agent', token: 'caller-token-long-name-1' }], logger });
    try {
      for (const letter of ['x', 'y', 'z']) {
        const name = `${letter}\u001b[2J`.padEnd(1 << 20, letter);
        const result = await server.executor.execute({ name, input: {}, agent: 'agent' });
        expect(result).toMatchObject({ outcome: 'completed', capture: { exitCode: 127 } });
      }
      const recent = server.status().recent;
      expect(recent).toHaveLength(3);
      for (const call of recent) expect(call.tool.length).toBeLessThanOrEqual(81);
      expect(recent[0]!.tool).toBe(`z\u001b[2J${'z'.repeat(75)}…`);
      const ended = lines.filter((line) => line.includes('"call ended"'));
      expect(ended).toHaveLength(3);
      for (const line of ended) expect(line.length).toBeLessThan(1000);
    } finally {
      await server.close();
    }
  });
});
