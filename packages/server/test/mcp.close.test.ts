/**
 * `ToolwireServer.close()` with MCP calls in flight: each caller still receives its call's result
 * (69, `server shutting down`) before the sessions close, whichever way the call was made — a plain
 * `tools/call`, one with a progress token, one asking for live output (`toolwire/stream`). A real
 * server on 127.0.0.1:0, a real tool host (the library), the MCP SDK client.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolHost } from '@toolwire/client';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolwireServer } from '../src/toolwire-server.js';
import { waitFor } from './endpoint.harness.js';

const HOST_TOKEN = 'host-token-mcp-close-1';
const CALLER_TOKEN = 'caller-token-mcp-close-1';
/** The SDK client's own request timeout, ms: far past the server's close bound (cancel grace 2 s + 0.5 s). */
const CLIENT_TIMEOUT_MS = 10_000;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Mode = 'plain' | 'progress' | 'stream';

describe('server close() with MCP calls in flight', () => {
  it.each<{ modes: Mode[] }>([
    { modes: ['plain'] },
    { modes: ['progress'] },
    { modes: ['stream'] },
    { modes: ['plain', 'progress', 'stream', 'stream', 'progress', 'plain'] },
  ])(
    '$modes: every caller receives its result, 69 "server shutting down", not a closed stream',
    async ({ modes }) => {
      const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }] });
      cleanups.push(() => server.close());
      const info = await server.listen(0, '127.0.0.1');
      const host = new ToolHost({ server: info.url, token: HOST_TOKEN, reconnect: false });
      cleanups.push(() => host.close());
      let running = 0;
      host.tool('hang', { inputSchema: { type: 'object' } }, async (_input, ctx) => {
        running++;
        await ctx.write('stdout', 'started\n');
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        return '';
      });
      await host.start();
      await waitFor(() => server.router.tools().some((t) => t.name === 'alpha__hang'), 'the tool advertised');

      const clients = await Promise.all(
        modes.map(async () => {
          const transport = new StreamableHTTPClientTransport(new URL(info.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } });
          const client = new Client({ name: 'mcp-close-test', version: '1.0.0' });
          await client.connect(transport);
          cleanups.push(() => client.close());
          return client;
        }),
      );
      const calls = modes.map((mode, i) => {
        const params = { name: 'alpha__hang', arguments: {}, ...(mode === 'stream' && { _meta: { 'toolwire/stream': true } }) };
        const options = { timeout: CLIENT_TIMEOUT_MS, ...(mode === 'progress' && { onprogress: () => {} }) };
        return clients[i]!.callTool(params, undefined, options).then(
          (result) => result.structuredContent,
          (error: unknown) => ({ error: String(error) }),
        );
      });
      await waitFor(() => running === modes.length, 'every call running on the host');
      await server.close();
      const results = await Promise.all(calls);
      for (const result of results) {
        expect(result).toMatchObject({ exitCode: 69, stderr: expect.stringMatching(/server shutting down/) });
      }
    },
    30_000,
  );
});
