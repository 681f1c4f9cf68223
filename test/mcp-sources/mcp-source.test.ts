/**
 * Issue 14: a tool host serves the tools of MCP servers (fake stdio servers of our own) as remote
 * tools, with their metadata, content blocks, cancellation, progress and lifecycle.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CALLER_TOKEN, alive, cleanup, defer, tempDir, text, waitFor } from '../helpers.js';
import { fake, hostWith, listed, run } from './harness.js';

afterEach(cleanup);

describe('the tools of a stdio MCP server', () => {
  it('are advertised as <server>_<tool> with title and annotations, and listed so by the MCP door', async () => {
    const { started } = await hostWith({ fake: fake() }, ['alpha__fake_echo'], (host) =>
      host.tool('local', { title: 'Local tool', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false } }, () => 'ok'),
    );
    const echo = started.server.router.tools().find((t) => t.name === 'alpha__fake_echo')!;
    expect(echo).toMatchObject({ title: 'Echo text', description: 'Echo the text', annotations: { readOnlyHint: true, idempotentHint: true } });
    expect(started.server.router.tools().find((t) => t.name === 'alpha__local')).toMatchObject({ title: 'Local tool', annotations: { readOnlyHint: false } });

    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(started.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } }));
    defer(() => client.close());
    const { tools } = await client.listTools();
    const listedEcho = tools.find((t) => t.name === 'alpha__fake_echo')!;
    expect(listedEcho.title).toBe('Echo text');
    expect(listedEcho.annotations).toEqual({ readOnlyHint: true, idempotentHint: true });
    expect(tools.find((t) => t.name === 'alpha__fake_structured')!.outputSchema).toMatchObject({ required: ['sum'] });

    // The door returns an MCP server's own blocks and structured content unchanged.
    const image = await client.callTool({ name: 'alpha__fake_image', arguments: {} });
    expect(image.content).toEqual([
      { type: 'text', text: 'a picture' },
      { type: 'image', data: Buffer.from('PNGDATA!').toString('base64'), mimeType: 'image/png' },
    ]);
    const structured = await client.callTool({ name: 'alpha__fake_structured', arguments: {} });
    expect(structured.structuredContent).toEqual({ sum: 3 });
    expect(structured.isError).toBe(false);

    // A call that reports MCP progress completes; the host sends it on as `progress` frames, which the
    // server passes to the door's `notifications/progress` (packages/server/test/mcp.live.test.ts).
    const progress = await client.callTool({ name: 'alpha__fake_progress', arguments: {} }, undefined, { onprogress: () => {} });
    expect(progress.content).toEqual([{ type: 'text', text: 'Exit code: 0\ndone' }]);
  });

  it('with an outputSchema, failing (isError, or ended by toolwire: 124): the SDK client gets the failure, not a structuredContent its schema refuses', async () => {
    const { started } = await hostWith({ fake: fake() }, ['alpha__fake_structured']);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(started.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } }));
    defer(() => client.close());
    await client.listTools(); // the client learns the tool's outputSchema and checks results against it
    const failed = await client.callTool({ name: 'alpha__fake_structured', arguments: { fail: true } });
    expect([failed.isError, failed.content]).toEqual([true, [{ type: 'text', text: 'Exit code: 1\n--- stderr ---\nno sum today' }]]);
    expect(failed.structuredContent).toBeUndefined();
    expect(failed._meta?.['toolwire/capture']).toMatchObject({ exitCode: 1, stderr: 'no sum today' });
    const late = await client.callTool({ name: 'alpha__fake_structured', arguments: { wait: true }, _meta: { 'toolwire/deadlineMs': 300 } });
    expect(late.isError).toBe(true);
    expect(JSON.stringify(late.content)).toContain('Exit code: 124');
    expect(late._meta?.['toolwire/capture']).toMatchObject({ exitCode: 124 });
  });

  it('turn a call into a capture: text blocks on stdout, isError → 1 with the text on stderr, a line per non-text block', async () => {
    const { started } = await hostWith({ fake: fake() }, ['alpha__fake_echo']);
    const echo = await run(started, 'alpha__fake_echo', { text: 'hello' });
    expect([echo.capture.exitCode, text(echo.capture.stdout)]).toEqual([0, 'hello\nsecond block']);
    expect(echo.capture.content).toBeUndefined();
    const fail = await run(started, 'alpha__fake_fail');
    expect([fail.capture.exitCode, text(fail.capture.stdout), text(fail.capture.stderr)]).toEqual([1, '', 'it went wrong']);
    const image = await run(started, 'alpha__fake_image');
    expect(text(image.capture.stdout)).toBe('a picture\n[image image/png 8 bytes]');
    expect(image.capture.content).toHaveLength(2);
  });

  it('a stop during a slow call ends it 130 at once, sends notifications/cancelled, and the server survives for the next call', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_slow']);
    const controller = new AbortController();
    const slow = run(started, 'alpha__fake_slow', {}, { signal: controller.signal });
    await waitFor(() => readFileSync(logFile, 'utf8').includes('call slow'), 'the slow call to reach the server');
    controller.abort();
    const stopped = await slow;
    expect(stopped.capture.exitCode).toBe(130);
    await waitFor(() => readFileSync(logFile, 'utf8').includes('cancelled slow'), 'notifications/cancelled to reach the server');
    const deadline = await run(started, 'alpha__fake_slow', {}, { deadlineMs: 300 });
    expect(deadline.capture.exitCode).toBe(124);
    const echo = await run(started, 'alpha__fake_echo', { text: 'still here' });
    expect(text(echo.capture.stdout)).toContain('still here');
    expect(readFileSync(logFile, 'utf8').match(/^start /gm)).toHaveLength(1); // never restarted
  });

  it('a server that crashes mid-call: the call ends 69 with the reason, its tools leave and return after the restart', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started, log } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_crash']);
    const crash = await run(started, 'alpha__fake_crash');
    expect(crash.capture.exitCode).toBe(69);
    expect(text(crash.capture.stderr)).toContain('MCP server fake exited with code 1');
    await waitFor(() => readFileSync(logFile, 'utf8').match(/^start /gm)?.length === 2, 'the restart');
    await listed(started, ['alpha__fake_echo']);
    expect(text((await run(started, 'alpha__fake_echo', { text: 'back' })).capture.stdout)).toContain('back');
    expect(log.entries.some((e) => String(e.msg).includes('exited with code 1; restarting'))).toBe(true);
  });

  it('a server that closes its stdin and exits a moment later: the calls sent meanwhile (a broken pipe) end 69 with its exit, not 70', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_hangup']);
    const hangup = run(started, 'alpha__fake_hangup');
    await waitFor(() => readFileSync(logFile, 'utf8').includes('call hangup'), 'the hangup call');
    // Calls over several turns: the first write finds the pipe broken, the later ones find stdin destroyed.
    const meanwhile: ReturnType<typeof run>[] = [];
    for (let i = 0; i < 10; i++) {
      meanwhile.push(run(started, 'alpha__fake_echo', { text: String(i) }));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const captures = (await Promise.all([hangup, ...meanwhile])).map((r) => r.capture);
    expect(captures.map((c) => c.exitCode)).toEqual(Array(11).fill(69));
    for (const c of captures) expect(text(c.stderr)).toContain('MCP server fake exited with code 1');
  });

  it('a server that closes its stdout and lives on: the call ends 69 at once, the server is killed and restarted', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_mute']);
    const first = Number(/start (\d+)/.exec(readFileSync(logFile, 'utf8'))![1]);
    const t0 = Date.now();
    const mute = await run(started, 'alpha__fake_mute', {}, { deadlineMs: 15_000 });
    expect([mute.capture.exitCode, text(mute.capture.stderr)]).toEqual([69, expect.stringContaining('MCP server fake closed its stdout')]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    await waitFor(() => !alive(first), 'the muted server to be killed');
    await listed(started, ['alpha__fake_echo']);
    expect(text((await run(started, 'alpha__fake_echo', { text: 'back' })).capture.stdout)).toContain('back');
  });

  it('a server that closes its stdin and lives on: the calls sent to it end 69, it is stopped and restarted (not 70 for every call, forever)', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_deaf']);
    const first = Number(/start (\d+)/.exec(readFileSync(logFile, 'utf8'))![1]);
    const deaf = run(started, 'alpha__fake_deaf', {}, { deadlineMs: 15_000 });
    await waitFor(() => readFileSync(logFile, 'utf8').includes('call deaf'), 'the deaf call');
    const after = await run(started, 'alpha__fake_echo', { text: 'lost' }, { deadlineMs: 15_000 });
    expect([after.capture.exitCode, text(after.capture.stderr)]).toEqual([69, expect.stringContaining('MCP server fake closed its stdin and was stopped')]);
    expect((await deaf).capture.exitCode).toBe(69);
    await waitFor(() => !alive(first), 'the deaf server to be stopped');
    await waitFor(async () => (await run(started, 'alpha__fake_echo', { text: 'back' })).capture.exitCode === 0, 'the restarted server', 10_000, 100);
  });

  it('a stdio MCP server that stops reading its stdin while it sends requests is stopped (the answers waiting are bounded): its calls end 69, it is restarted', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', { maxMessageBytes: 64 * 1024 }, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_flood']);
    const first = Number(/start (\d+)/.exec(readFileSync(logFile, 'utf8'))![1]);
    const flood = await run(started, 'alpha__fake_flood', {}, { deadlineMs: 15_000 });
    expect([flood.capture.exitCode, text(flood.capture.stderr)]).toEqual([
      69,
      expect.stringContaining('MCP server fake did not read its stdin (over 131072 bytes waited) and was stopped'),
    ]);
    await waitFor(() => !alive(first), 'the flooding server to be stopped');
    await waitFor(async () => (await run(started, 'alpha__fake_echo', { text: 'back' })).capture.exitCode === 0, 'the restarted server', 10_000, 100);
  });

  it('a storm of tools/list_changed is coalesced: one tools/list at a time and one more after it, not one per notification', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started } = await hostWith({ fake: fake('normal', {}, { MCP_FAKE_LOG: logFile }) }, ['alpha__fake_storm']);
    const lists = (): number =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((line) => line === 'list').length;
    const before = lists();
    expect((await run(started, 'alpha__fake_storm')).capture.exitCode).toBe(0);
    await run(started, 'alpha__fake_grow'); // its notification comes after the storm's, on the same pipe
    await listed(started, ['alpha__fake_grown']);
    expect(lists() - before).toBeLessThanOrEqual(4);
  });

  it('tools/list_changed re-advertises; progress reaches the caller; a name clash is refused with a logged reason', async () => {
    const { started, log } = await hostWith({ fake: fake() }, ['alpha__fake_grow'], (host) =>
      host.tool('fake_echo', { inputSchema: { type: 'object' } }, () => 'mine'),
    );
    expect(text((await run(started, 'alpha__fake_echo')).capture.stdout)).toBe('mine');
    expect(log.entries.some((e) => e.level === 'warn' && String(e.msg).includes('"fake_echo" of mcp:fake refused'))).toBe(true);
    await run(started, 'alpha__fake_grow');
    await listed(started, ['alpha__fake_grown']);
    expect(text((await run(started, 'alpha__fake_progress')).capture.stdout)).toBe('done');
  });
});

describe('bad MCP servers are bounded and the host keeps serving its other tools', () => {
  it('one that never answers initialize, one that writes garbage, one that writes a 100 MB line, one with 10,000 tools', async () => {
    const { started, log } = await hostWith(
      {
        mute: fake('noinit', { startupTimeoutMs: 300 }),
        noisy: fake('garbage'),
        big: fake('bigline', { maxMessageBytes: 1024 * 1024, startupTimeoutMs: 5_000 }),
        many: fake('many', { prefix: 'm_' }),
      },
      ['alpha__noisy_echo', 'alpha__m_t0'],
      (host) => host.tool('local', { inputSchema: { type: 'object' } }, () => 'ok'),
    );
    expect(text((await run(started, 'alpha__local')).capture.stdout)).toBe('ok');
    expect(text((await run(started, 'alpha__noisy_echo', { text: 'x' })).capture.stdout)).toContain('x');
    expect(started.server.router.tools().filter((t) => t.name.startsWith('alpha__m_'))).toHaveLength(256 - 1 - 14); // the host's 256 minus local and noisy's 14
    await waitFor(() => log.entries.some((e) => String(e.msg).includes('MCP server mute did not start')), 'the startup timeout');
    await waitFor(() => log.entries.some((e) => String(e.msg).includes('longer than 1048576 bytes')), 'the long line refused');
    await waitFor(() => log.entries.some((e) => String(e.msg).includes('lists more than 256 tools')), 'the tool bound');
    expect(started.server.router.tools().some((t) => t.name.startsWith('alpha__mute_') || t.name.startsWith('alpha__big_'))).toBe(false);
    // A tool whose schema the server rejects: rejected alone.
    expect(log.entries.some((e) => e.level === 'warn' && JSON.stringify(e.obj).includes('noisy_badschema'))).toBe(true);
  });
});

describe('an MCP server that does not start in time', () => {
  it("the start failure names startup_timeout_ms and its value; the restart line does not blame the server for toolwire's own SIGTERM", async () => {
    const { log } = await hostWith({ mute: fake('noinit', { startupTimeoutMs: 300 }) }, [], (host) =>
      host.tool('local', { inputSchema: { type: 'object' } }, () => 'ok'),
    );
    const failed = await waitFor(() => log.entries.find((e) => String(e.msg).includes('MCP server mute did not start')), 'the startup timeout', 10_000);
    expect(String(failed.msg)).toBe('toolwire: MCP server mute did not start: no answer to initialize within 300 ms (startup_timeout_ms)');
    const restart = await waitFor(() => log.entries.find((e) => String(e.msg).includes('restarting in')), 'the restart line', 10_000);
    expect(String(restart.msg)).toMatch(/^toolwire: MCP server mute was stopped by toolwire \(it did not start\); restarting in \d+ ms$/);
    expect(log.entries.some((e) => String(e.msg).includes('killed by'))).toBe(false);
  });
});

describe('a tools/list that never ends', () => {
  it('empty pages with a next cursor, forever: the listing stops (logged) and the tools listed so far are served', async () => {
    const dir = await tempDir();
    const logFile = `${dir}/fake.log`;
    const { started, log } = await hostWith({ endless: fake('endless', {}, { MCP_FAKE_LOG: logFile }) }, [], (host) =>
      host.tool('local', { inputSchema: { type: 'object' } }, () => 'ok'),
    );
    await listed(started, ['alpha__endless_echo'], 10_000);
    expect(
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((line) => line === 'list').length,
    ).toBeLessThanOrEqual(3);
    expect(log.entries.some((e) => e.level === 'warn' && String(e.msg).includes('tools/list gave a page without tools'))).toBe(true);
  });
});

describe('answers that are not what the host asked for', () => {
  it('a result that is not a CallToolResult ends that call 70 with the reason; stray answers and progress are dropped', async () => {
    const { started, log } = await hostWith({ odd: fake('badresult') }, ['alpha__odd_image']);
    const image = await run(started, 'alpha__odd_image');
    expect(image.capture.exitCode).toBe(70);
    expect(text(image.capture.stderr)).toContain('MCP server odd failed the call: its result is not a CallToolResult');
    const echo = await run(started, 'alpha__odd_echo', { text: 'still fine' });
    expect([echo.capture.exitCode, text(echo.capture.stdout)]).toEqual([0, 'still fine\nsecond block']);
    expect(log.entries.filter((e) => String(e.msg).includes('MCP server odd:'))).toEqual([]); // the SDK client never saw the stray messages
  });
});

describe('a Streamable HTTP MCP server', () => {
  it('on port 0 serves its tools through the host', async () => {
    const { startHttpMcp } = await import('./http-server.js');
    const url = await startHttpMcp();
    const { started } = await hostWith({ web: { url } }, ['alpha__web_add']);
    const sum = await run(started, 'alpha__web_add', { a: 2, b: 3 });
    expect([sum.capture.exitCode, text(sum.capture.stdout)]).toEqual([0, '5']);
    expect(alive(process.pid)).toBe(true);
  });

  it('that sends a message longer than max_message_bytes: the call ends 69 with the reason, the connection is dropped and opened again', async () => {
    const { startHttpMcpServer } = await import('./http-server.js');
    const web = await startHttpMcpServer();
    const { started } = await hostWith({ web: { url: web.url, maxMessageBytes: 1024 * 1024 } }, ['alpha__web_huge']);
    const huge = await run(started, 'alpha__web_huge', {}, { deadlineMs: 15_000 });
    expect([huge.capture.exitCode, text(huge.capture.stderr)]).toEqual([69, expect.stringContaining('MCP server web sent a message longer than 1048576 bytes')]);
    await waitFor(async () => (await run(started, 'alpha__web_add', { a: 2, b: 3 })).capture.exitCode === 0, 'the connection opened again', 10_000, 100);
  });

  it('that ends the answer stream of a call without the answer: that call ends 69 at once, the server keeps serving', async () => {
    const { startHttpMcpServer } = await import('./http-server.js');
    const web = await startHttpMcpServer();
    const { started } = await hostWith({ web: { url: web.url } }, ['alpha__web_drop']);
    const dropped = await run(started, 'alpha__web_drop', {}, { deadlineMs: 15_000 });
    expect([dropped.capture.exitCode, text(dropped.capture.stderr)]).toEqual([69, 'toolwire: MCP server web ended the stream of a call without its answer\n']);
    const sum = await run(started, 'alpha__web_add', { a: 2, b: 3 });
    expect([sum.capture.exitCode, text(sum.capture.stdout)]).toEqual([0, '5']);
  });

  it('that goes away mid-call: the call ends 69 at once with the reason, its tools leave, and return when it is back on its port', async () => {
    const { startHttpMcpServer } = await import('./http-server.js');
    const web = await startHttpMcpServer();
    const { started } = await hostWith({ web: { url: web.url } }, ['alpha__web_add', 'alpha__web_slow']);
    const slow = run(started, 'alpha__web_slow', {}, { deadlineMs: 15_000 });
    await waitFor(() => web.slowCalls() === 1, 'the call to reach the MCP server');
    const t0 = Date.now();
    await web.stop();
    const ended = await slow;
    expect([ended.capture.exitCode, text(ended.capture.stderr)]).toEqual([
      69,
      expect.stringMatching(/^toolwire: MCP server web closed its connection during a call/),
    ]);
    expect(Date.now() - t0).toBeLessThan(3_000);
    await waitFor(() => !started.server.router.tools().some((t) => t.name === 'alpha__web_add'), 'its tools to leave');

    const back = await startHttpMcpServer(Number(new URL(web.url).port));
    await listed(started, ['alpha__web_add']);
    const sum = await run(started, 'alpha__web_add', { a: 2, b: 3 });
    expect([sum.capture.exitCode, text(sum.capture.stdout)]).toEqual([0, '5']);

    // Gone between calls (no stream open to see it go): the next call finds it unreachable → 69, not 70.
    await back.stop();
    const next = await run(started, 'alpha__web_add', { a: 2, b: 3 });
    expect([next.capture.exitCode, text(next.capture.stderr)]).toEqual([
      69,
      expect.stringMatching(/^toolwire: MCP server web closed its connection \(fetch failed\)/),
    ]);
    await waitFor(() => !started.server.router.tools().some((t) => t.name === 'alpha__web_add'), 'its tools to leave again');
  });
});
