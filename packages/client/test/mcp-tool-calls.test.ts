/**
 * Issue 14, the host's `tools/call` results (`sources/mcp/tool-calls.ts`): a result of text blocks
 * with `structuredContent` (what server-filesystem's tools answer) is taken field by field, and
 * gives the call what the SDK's `CallToolResultSchema` would; anything the field check does not
 * cover still goes through the schema. The MCP server's side is the SDK's in-memory transport.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallToolResult, CallToolResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolCalls } from '../src/sources/mcp/tool-calls.js';

const open: InMemoryTransport[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});

/** Call a tool through a fresh `ToolCalls`; its MCP server answers with `result` (any JSON). */
async function answer(result: unknown): Promise<{ done?: CallToolResult; failed?: string }> {
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  open.push(ours, theirs);
  theirs.onmessage = (message: JSONRPCMessage) => {
    if ('id' in message && 'method' in message) void theirs.send({ jsonrpc: '2.0', id: message.id, result } as JSONRPCMessage);
  };
  await theirs.start();
  await ours.start();
  const calls = new ToolCalls(ours, CallToolResultSchema);
  return new Promise((resolve) => {
    calls.call(
      'read_text_file',
      { path: '/a.txt' },
      {
        done: (r) => resolve({ done: r }),
        failed: (reason) => resolve({ failed: reason }),
        progress: () => {},
        gone: (reason) => resolve({ failed: `gone: ${reason}` }),
      },
    );
  });
}

describe('tools/call results with structuredContent', () => {
  it('text blocks and an object structuredContent reach the call unchanged', async () => {
    const result = { content: [{ type: 'text', text: 'line 1\nline 2\n' }], structuredContent: { content: 'line 1\nline 2\n' } };
    expect(await answer(result)).toEqual({ done: result });
  });

  it('a block with a key no content block has goes through the schema, which drops that key', async () => {
    const { done } = await answer({ content: [{ type: 'text', text: 'x', stray: 1 }], structuredContent: { n: 1 } });
    expect(done).toEqual({ content: [{ type: 'text', text: 'x' }], structuredContent: { n: 1 } });
  });

  it('a structuredContent that is not an object fails the call', async () => {
    const { failed } = await answer({ content: [{ type: 'text', text: 'x' }], structuredContent: [1, 2] });
    expect(failed).toMatch(/not a CallToolResult/);
  });
});
