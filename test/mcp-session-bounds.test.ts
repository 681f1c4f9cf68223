/**
 * The MCP door's session bounds hold against initialize requests sent at once, also while the MCP
 * SDK is still being loaded (the first session of a server: every request admitted meanwhile waits on
 * that load). This file must open the process's first MCP session (vitest runs each file in its own
 * process), so the SDK is cold when the burst arrives.
 */
import { afterEach, expect, it } from 'vitest';
import { CALLER_TOKEN, cleanup, startServer } from './helpers.js';

afterEach(cleanup);

it('a burst of initialize requests on a fresh server opens no more sessions than mcpMaxSessionsPerCaller / mcpMaxSessions', async () => {
  const { server, mcpUrl } = await startServer({ mcpMaxSessionsPerCaller: 2, mcpMaxSessions: 3 });
  const initialize = (): Promise<number> =>
    fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${CALLER_TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'burst', version: '1' } },
      }),
    }).then(async (res) => {
      await res.text();
      return res.status;
    });
  const statuses = await Promise.all(Array.from({ length: 40 }, initialize));
  expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
  expect(server.mcp.sessionCount).toBeLessThanOrEqual(2);
});
