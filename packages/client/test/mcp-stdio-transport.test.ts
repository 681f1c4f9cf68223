/**
 * The stdio transport of an MCP server (src/sources/mcp/stdio-transport.ts) under a burst of
 * requests, against a real child process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { StdioServerTransport } from '../src/sources/mcp/stdio-transport.js';

/** A transport to a node child running `script` (`node -e`): PATH only, 1 MiB messages, a 1 s kill grace. */
function nodeServer(script: string): StdioServerTransport {
  return new StdioServerTransport({
    command: process.execPath,
    args: ['-e', script],
    cwd: process.cwd(),
    env: { PATH: process.env.PATH },
    maxMessageBytes: 1 << 20,
    killGraceMs: 1000,
  });
}

describe('StdioServerTransport: a burst of requests past the pipe’s buffer', () => {
  let transport: StdioServerTransport | undefined;
  afterEach(async () => {
    await transport?.close();
    transport = undefined;
  });

  it('waits for one drain, not one listener per request: 500 requests of 1 KiB raise no MaxListenersExceededWarning and all leave', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.name);
    };
    process.on('warning', onWarning);
    try {
      // A server that reads everything and answers nothing: stdin drains as it reads.
      transport = nodeServer('let n = 0; process.stdin.on("data", (d) => { n += d.length; }); process.stdin.on("end", () => process.stderr.write(String(n)));');
      await transport.start();
      const pad = 'p'.repeat(1024);
      const sends = Array.from({ length: 500 }, (_, i) =>
        transport!.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'x', arguments: { pad } } }),
      );
      await Promise.all(sends);
      await new Promise((resolve) => setImmediate(resolve)); // a warning is emitted on a later tick
      expect(warnings.filter((name) => name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('StdioServerTransport: writes waiting on a server that dies', () => {
  it('2,000 requests waiting for a drain that never comes all settle once the server is killed (none waits forever)', async () => {
    // A server that never reads its stdin: the pipe fills and the writes wait for a drain.
    const transport = nodeServer('setInterval(() => {}, 1000);');
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    await transport.start();
    const pad = 'p'.repeat(1024);
    const sends = Array.from({ length: 2000 }, (_, i) =>
      transport.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'x', arguments: { pad } } }).then(
        () => 'settled',
        () => 'settled',
      ),
    );
    process.kill(transport.pid!, 'SIGKILL');
    await closed;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<string[]>((resolve) => (timer = setTimeout(() => resolve(['still waiting']), 5_000)));
    const outcome = await Promise.race([Promise.all(sends), bound]);
    clearTimeout(timer);
    expect(outcome).toEqual(Array(2000).fill('settled'));
  });
});

describe('StdioServerTransport: a server that closes its stdin and lives on', () => {
  it('writes after the pipe broke fail with "not running" within about a second, none waits forever', async () => {
    const transport = nodeServer('require("node:fs").closeSync(0); setInterval(() => {}, 1000);');
    await transport.start();
    try {
      const outcomes: Promise<string>[] = [];
      for (let i = 0; i < 10; i++) {
        outcomes.push(
          transport.send({ jsonrpc: '2.0', id: i, method: 'ping' }).then(
            () => 'sent',
            (error: Error) => error.message,
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 20)); // writes over several turns: the pipe breaks on one of them
      }
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<string[]>((resolve) => (timer = setTimeout(() => resolve(['still waiting']), 5_000)));
      const settled = await Promise.race([Promise.all(outcomes), bound]);
      clearTimeout(timer);
      expect(settled).toHaveLength(10);
      expect(settled.at(-1)).toBe('the MCP server is not running');
      expect(transport.exit).toBeUndefined(); // it still runs: the writes did not wait for its end
    } finally {
      await transport.close();
    }
  });
});
