/**
 * Issue 14, the host's wire side for MCP tools: MCP progress becomes `progress` frames, content
 * blocks and metadata travel on protocol 2 only (a protocol 1 server never sees them).
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { AdvertiseMessage, ProgressMessage, ResultMessage } from '@toolwire/protocol';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolHost } from '../src/index.js';
import { type FakeConnection, FakeServer, type FakeServerOptions } from './helpers/fake-server.js';
import { poll } from './helpers/process.js';

const FAKE = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures', 'mcp-fake.mjs');
const servers: FakeServer[] = [];
const hosts: ToolHost[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function connect(options: FakeServerOptions): Promise<FakeConnection> {
  const s = await FakeServer.start(options);
  servers.push(s);
  const h = new ToolHost({ server: s.url, token: 'tok', logger: pino({ level: 'silent' }), reconnect: false });
  h.mcpServer('fake', { command: process.execPath, args: [FAKE, 'normal'] });
  hosts.push(h);
  await h.start();
  return s.connections[0]!;
}

/** The last advertise once it lists `name`. */
const advertising = (conn: FakeConnection, name: string) =>
  poll(
    () => conn.frames.findLast((f): f is AdvertiseMessage => f.type === 'advertise' && f.tools.some((t) => t.name === name)),
    15_000,
    `an advertise with ${name}`,
  );

function call(conn: FakeConnection, id: string, tool: string): Promise<ResultMessage> {
  conn.send({ type: 'call', id, tool, input: {}, workspace: '/ws', agent: 'a', deadlineMs: 20_000 });
  return poll(() => conn.frames.find((f): f is ResultMessage => f.type === 'result' && f.id === id), 15_000, `the result of ${id}`);
}

describe('MCP tools on the wire', () => {
  it('protocol 2: metadata advertised, MCP progress sent as progress frames, content blocks in the result', async () => {
    const conn = await connect({ protocol: 2, output: { windowBytes: 1 << 20, maxChunkBytes: 1 << 16 } });
    const advertise = await advertising(conn, 'fake_echo');
    expect(advertise.tools.find((t) => t.name === 'fake_echo')).toMatchObject({ title: 'Echo text', annotations: { readOnlyHint: true, idempotentHint: true } });
    const progress = await call(conn, 'p1', 'fake_progress');
    expect(progress).toMatchObject({ exitCode: 0, stdout: 'done' });
    const frames = conn.frames.filter((f): f is ProgressMessage => f.type === 'progress' && f.id === 'p1');
    expect(frames[0]).toEqual({ type: 'progress', id: 'p1', message: 'half way' });
    const image = await call(conn, 'i1', 'fake_image');
    expect(image.content).toEqual([
      { type: 'text', text: 'a picture' },
      { type: 'image', data: Buffer.from('PNGDATA!').toString('base64'), mimeType: 'image/png' },
    ]);
    expect(conn.violations).toEqual([]);
  });

  it('protocol 1: no metadata in advertise, no content in results (the text stays on stdout)', async () => {
    const conn = await connect({});
    const advertise = await advertising(conn, 'fake_echo');
    for (const tool of advertise.tools) expect(Object.keys(tool).sort()).toEqual(expect.arrayContaining(['inputSchema', 'name']));
    expect(advertise.tools.some((t) => 'title' in t || 'annotations' in t || 'outputSchema' in t)).toBe(false);
    const image = await call(conn, 'i1', 'fake_image');
    expect(image).toMatchObject({ exitCode: 0, stdout: 'a picture\n[image image/png 8 bytes]' });
    expect('content' in image || 'structured' in image).toBe(false);
    expect(conn.violations).toEqual([]);
  });

  it('a call that reaches the host after its MCP server died and its tools left is answered 69 with the reason, not 127', async () => {
    const conn = await connect({ protocol: 2, output: { windowBytes: 1 << 20, maxChunkBytes: 1 << 16 } });
    await advertising(conn, 'fake_echo');
    const crash = await call(conn, 'c1', 'fake_crash');
    expect(crash).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    // Sent as the server would before it read the host's new advertise (the restart takes longer than this).
    const late = await call(conn, 'c2', 'fake_echo');
    expect(late).toMatchObject({ exitCode: 69, failure: 'unavailable' });
    expect(late.stderr).toBe('toolwire: tool "fake_echo" is gone: MCP server fake exited with code 1\n');
    expect((await call(conn, 'c3', 'fake_nope')).exitCode).toBe(127); // never one of its tools
    // Back after the restart: served again, and a name it no longer has is 127 again.
    await poll(
      () => conn.frames.filter((f) => f.type === 'advertise' && f.tools.some((t) => t.name === 'fake_echo')).length >= 2 || undefined,
      15_000,
      'the re-advertise',
    );
    expect(await call(conn, 'c4', 'fake_echo')).toMatchObject({ exitCode: 0 });
    expect(conn.violations).toEqual([]);
  });
});
