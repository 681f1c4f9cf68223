/**
 * Issue 15 §3 end to end: a real `ToolwireServer` on 127.0.0.1:0, a real tool host, and the real MCP
 * SDK clients — the 1.x `@modelcontextprotocol/sdk` and the v2 `@modelcontextprotocol/client` (2025
 * era and pinned to 2026-07-28). SDK clients send `JSON.stringify` output, which never holds a
 * repeated key; to send argument texts as other agents may write them, each client gets a `fetch`
 * that puts the raw text in place of a marker object. Every text the door accepts reaches the tool
 * with the value that was sent (the reference reader of `json-quirks.ts` says what that is); every
 * other is answered 65 naming the path and the reason, and the tool never runs.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolHost } from '@toolwire/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { argumentsText, canonical, reference } from '../packages/server/test/json-quirks.js';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, defer, startServer } from './helpers.js';

const MARKER = 'toolwire-test-raw-arguments';
/** Raw argument texts by marker number. */
const raws = new Map<number, string>();
let next = 0;
/** What the `echo` tool received, in order. */
const received: unknown[] = [];

/** `fetch` that sends `raws.get(n)` where the body holds the arguments `{MARKER: n}`. */
const rawFetch: typeof fetch = (input, init) => {
  const body = init?.body;
  if (typeof body === 'string' && body.includes(MARKER)) {
    const replaced = body.replace(new RegExp(`\\{"${MARKER}":(\\d+)\\}`), (_m, n: string) => raws.get(Number(n))!);
    return fetch(input, { ...init, body: replaced });
  }
  return fetch(input, init);
};

type Caller = { callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown> };
const clients: Record<string, Caller> = {};

beforeAll(async () => {
  const { url, mcpUrl } = await startServer();
  const host = new ToolHost({ server: url, token: HOST_TOKEN, reconnect: false });
  host.tool('echo', { inputSchema: { type: 'object' } }, (input) => {
    received.push(input);
    return 'ok';
  });
  defer(() => host.close());
  await host.start();
  const requestInit = { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } };
  const v1 = new ClientV1({ name: 'v1', version: '1' });
  await v1.connect(new TransportV1(new URL(mcpUrl), { requestInit, fetch: rawFetch }));
  defer(() => v1.close());
  const v2 = new ClientV2({ name: 'v2', version: '1' });
  await v2.connect(new TransportV2(new URL(mcpUrl), { requestInit, fetch: rawFetch }));
  defer(() => v2.close());
  const modern = new ClientV2({ name: 'v2-modern', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modern.connect(new TransportV2(new URL(mcpUrl), { requestInit, fetch: rawFetch }));
  defer(() => modern.close());
  expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  Object.assign(clients, { 'sdk 1.x (2025 session)': v1, 'client v2 (2025 session)': v2, 'client v2 (2026-07-28)': modern });
});
afterAll(cleanup);

type Result = { isError?: boolean; structuredContent?: { exitCode?: number; stderr?: string } };

/** Call `alpha__echo` through `client` with the raw arguments text `args`; the result and what the tool received (if it ran). */
async function callRaw(client: Caller, args: string): Promise<{ result: Result; input?: unknown }> {
  const n = next++;
  raws.set(n, args);
  const before = received.length;
  const result = (await client.callTool({ name: 'alpha__echo', arguments: { [MARKER]: n } })) as Result;
  raws.delete(n);
  return { result, ...(received.length > before && { input: received.at(-1) }) };
}

describe.each(['sdk 1.x (2025 session)', 'client v2 (2025 session)', 'client v2 (2026-07-28)'])('arguments sent by the %s', (name) => {
  it('random argument texts: each the door accepts reaches the tool with the value sent; each other is 65 naming the same path, the tool not run', async () => {
    const client = clients[name]!;
    const seen = { accepted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(argumentsText, async (args) => {
        const ref = reference(args);
        const { result, input } = await callRaw(client, args);
        if (ref.found === undefined) {
          seen.accepted++;
          expect(result.structuredContent?.exitCode).toBe(0);
          expect(canonical(reference(JSON.stringify(input)).tree)).toBe(canonical(ref.tree));
        } else {
          seen.refused++;
          expect(result.isError).toBe(true);
          expect(result.structuredContent?.exitCode).toBe(65);
          expect(result.structuredContent?.stderr).toContain(JSON.stringify(ref.found.path));
          expect(input).toBeUndefined();
        }
      }),
      { numRuns: 100 },
    );
    expect(seen.accepted).toBeGreaterThan(10); // both sides were exercised
    expect(seen.refused).toBeGreaterThan(10);
  });

  it.each([
    ['a repeated key', '{"a":1,"a":2}', 'arguments.a', 'appears more than once in one object'],
    ['a __proto__ key', '{"o":[{"__proto__":{"x":1}}]}', 'arguments.o[0].__proto__', '"__proto__" is refused'],
    ['an integer past 2^53', '{"id":12345678901234567890}', 'arguments.id', 'would reach the tool as 12345678901234567000'],
    ['a number out of range', '{"x":1e400}', 'arguments.x', 'would reach the tool as null'],
  ])('%s → 65 with the path and the reason, the tool not run', async (_what, args, path, reason) => {
    const { result, input } = await callRaw(clients[name]!, args);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ exitCode: 65 });
    expect(result.structuredContent?.stderr).toContain(reason);
    expect(result.structuredContent?.stderr).toContain(JSON.stringify(path));
    expect(input).toBeUndefined();
  });

  it('numbers of the same value in another spelling pass: 1.0 → 1, 1e2 → 100, -0 → 0', async () => {
    const { result, input } = await callRaw(clients[name]!, '{"a":1.0,"b":1e2,"c":-0,"d":9007199254740992}');
    expect(result.structuredContent?.exitCode).toBe(0);
    expect(JSON.stringify(input)).toBe('{"a":1,"b":100,"c":0,"d":9007199254740992}');
  });
});
