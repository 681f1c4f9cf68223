/**
 * Issue 15 §8 — `toolwire mcp`, the stdio door, used by the MCP SDK's stdio client: a real
 * `ToolwireServer` on 127.0.0.1:0, a real tool host (in this process), and `toolwire mcp` as a child
 * process (from source). Tools, calls with unchanged input and results, progress, cancellation by
 * the SDK and by raw ids 0 and "", tool-list changes, the end of stdin, and the start-up failures.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, type Socket, connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { type Progress, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolHost } from '@toolwire/client';
import { type ListenInfo, ToolwireServer } from '@toolwire/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { poll } from '../../client/test/helpers/process.js';

const here = dirname(fileURLToPath(import.meta.url));
const cliMain = join(here, '..', 'src', 'main.ts');
const NODE_ARGS = ['--conditions=@toolwire/source', '--import', 'tsx'];
const HOST_TOKEN = 'host-token-stdio-door-1';
const CALLER_TOKEN = 'caller-token-stdio-door-1';

let dir: string;
let tokenFile: string;
let info: ListenInfo;
let server: ToolwireServer;
let host: ToolHost;
/** What the `wait` tool saw: started, then stopped (aborted) or not. */
let waits: { started: number; stopped: number };
const cleanups: (() => unknown)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolwire-mcp-stdio-'));
  tokenFile = join(dir, 'caller.token');
  await writeFile(tokenFile, `${CALLER_TOKEN}\n`, { mode: 0o600 });
  server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }] });
  cleanups.push(() => server.close());
  info = await server.listen(0, '127.0.0.1');
  waits = { started: 0, stopped: 0 };
  host = new ToolHost({ server: info.url, token: HOST_TOKEN, reconnect: false });
  host.tool('echo', { description: 'stdout = the input JSON', inputSchema: { type: 'object' } }, (input) => JSON.stringify(input));
  host.tool('steps', { inputSchema: { type: 'object' } }, async (_input, ctx) => {
    for (let i = 1; i <= 3; i++) {
      await ctx.write('stdout', `step ${i}\n`);
      await new Promise((resolve) => setTimeout(resolve, 400)); // the tool's own pace (progress goes out at most every 250 ms)
    }
    return '';
  });
  host.tool(
    'wait',
    { inputSchema: { type: 'object' } },
    (_input, ctx) =>
      new Promise((resolve) => {
        waits.started++;
        ctx.signal.addEventListener('abort', () => {
          waits.stopped++;
          resolve('partial\n');
        });
      }),
  );
  cleanups.push(() => host.close());
  await host.start();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(dir, { recursive: true, force: true });
});

/** Environment of `toolwire mcp`: no inherited TOOLWIRE_* and an empty TOOLWIRE_HOME (no credentials file). */
function env(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: dir, TOOLWIRE_HOME: dir, ...extra };
}

async function stdioClient(args: string[] = ['--server', info.mcpUrl, '--token-file', tokenFile]): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [...NODE_ARGS, cliMain, 'mcp', ...args], env: env(), stderr: 'pipe' });
  const client = new Client({ name: 'stdio-door-test', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, transport };
}

/** Run `toolwire mcp ARGS` with stdin closed at once; resolves with its exit code and stderr. */
async function runOnce(args: string[], extra: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const child: ChildProcess = spawn(process.execPath, [...NODE_ARGS, cliMain, 'mcp', ...args], { env: env(extra), stdio: ['pipe', 'pipe', 'pipe'] });
  cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout!.resume();
  child.stdin!.end();
  const [code] = (await once(child, 'close')) as [number | null]; // at 'exit' stderr may still be unread
  return { code, stderr };
}

describe('toolwire mcp (stdio door) with the SDK stdio client', () => {
  it('lists the tools and forwards a call: input unchanged, the result (text and structuredContent) as the door gave it', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['alpha__echo', 'alpha__steps', 'alpha__wait']));
    expect(tools.find((t) => t.name === 'alpha__echo')).toMatchObject({ description: 'stdout = the input JSON', inputSchema: { type: 'object' } });
    const input = { text: 'héllo', n: 0, nested: { list: [1, null, 'x'], constructor: 'data' } };
    const result = await client.callTool({ name: 'alpha__echo', arguments: input });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ stdout: JSON.stringify(input), stderr: '', exitCode: 0 });
    expect(result.content).toEqual([{ type: 'text', text: `Exit code: 0\n${JSON.stringify(input)}` }]);
  });

  it('forwards progress under the client’s own progress token', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'alpha__steps', arguments: {} }, undefined, { onprogress: (p) => void progress.push(p) });
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: 'step 1\nstep 2\nstep 3\n' });
    // The door sends progress on output at most every 250 ms (the first may fall inside that gap):
    // each one carries the last line and the bytes of output so far.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.at(-1)).toMatchObject({ message: 'step 3', progress: 21 });
    for (const p of progress) expect(p.progress).toBe(7 * Number(/^step (\d)$/.exec(p.message ?? '')?.[1]));
  });

  it('stops the call on the server when the client cancels (AbortSignal → notifications/cancelled)', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    const abort = new AbortController();
    const call = client.callTool({ name: 'alpha__wait', arguments: {} }, undefined, { signal: abort.signal });
    await poll(() => waits.started === 1, 10_000);
    abort.abort('enough');
    await expect(call).rejects.toThrow();
    await poll(() => waits.stopped === 1, 10_000);
  });

  it('passes on notifications/tools/list_changed when a host changes its tools', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await client.listTools();
    host.tool('later', { inputSchema: { type: 'object' } }, () => 'later\n');
    await poll(() => changed > 0, 10_000);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('alpha__later');
  });

  it('exits 0 when stdin ends, cancelling its calls in flight on the server', { timeout: 30_000 }, async () => {
    const { client, transport } = await stdioClient();
    void client.callTool({ name: 'alpha__wait', arguments: {} }).catch(() => {});
    await poll(() => waits.started === 1, 10_000);
    const pid = transport.pid!;
    await client.close(); // ends the child's stdin
    await poll(() => waits.stopped === 1, 10_000);
    await poll(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
  });
});

describe('toolwire mcp with a raw stdio client', () => {
  it('cancels calls whose request ids are 0 and "" (ids the SDK’s own handler ignores)', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, [...NODE_ARGS, cliMain, 'mcp', '--server', info.mcpUrl, '--token-file', tokenFile], {
      env: env(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
    child.stderr.resume();
    const lines: Record<string, unknown>[] = [];
    let buffer = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
        buffer = buffer.slice(nl + 1);
      }
    });
    const send = (message: object): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({ id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await poll(() => lines.some((m) => m.id === 'init'), 15_000);
    send({ method: 'notifications/initialized' });
    for (const [n, id] of [0, ''].entries()) {
      send({ id, method: 'tools/call', params: { name: 'alpha__wait', arguments: {} } });
      await poll(() => waits.started === n + 1, 10_000);
      send({ method: 'notifications/cancelled', params: { requestId: id, reason: 'raw cancel' } });
      await poll(() => waits.stopped === n + 1, 10_000);
    }
    child.stdin.end();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});

describe('toolwire mcp and a message past its bound', () => {
  it('drops a stdin line over 10 MiB with a note on stderr and keeps serving (it does not exit 0 as if stdin had ended)', { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, [...NODE_ARGS, cliMain, 'mcp', '--server', info.mcpUrl, '--token-file', tokenFile], {
      env: env(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdin.on('error', () => {}); // EPIPE, should it exit
    const lines: Record<string, unknown>[] = [];
    let buffer = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
        buffer = buffer.slice(nl + 1);
      }
    });
    const send = (message: object): boolean => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({ id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await poll(() => lines.some((m) => m.id === 'init'), 15_000);
    send({ method: 'notifications/initialized' });
    send({ id: 1, method: 'tools/call', params: { name: 'alpha__wait', arguments: {} } });
    await poll(() => waits.started === 1, 10_000);
    send({ id: 2, method: 'tools/call', params: { name: 'alpha__echo', arguments: { big: 'x'.repeat(11 * 1024 * 1024) } } });
    send({ id: 3, method: 'tools/call', params: { name: 'alpha__echo', arguments: { after: true } } });
    await poll(() => lines.some((m) => m.id === 3), 15_000, 'the answer to the call after the long line');
    expect(JSON.stringify(lines.find((m) => m.id === 3))).toContain('after');
    expect(stderr).toMatch(/toolwire mcp: dropped a message of more than 10485760 bytes on stdin/);
    expect([child.exitCode, waits.stopped]).toEqual([null, 0]); // still serving; the call in flight runs on
    child.stdin.end();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});

describe('toolwire mcp passes arguments as they were written', () => {
  it(
    'arguments JSON.parse would change (a repeated key, an integer past 2^53, 1e400) are refused 65 by the door naming the path; others reach the tool',
    { timeout: 30_000 },
    async () => {
      const child = spawn(process.execPath, [...NODE_ARGS, cliMain, 'mcp', '--server', info.mcpUrl, '--token-file', tokenFile], {
        env: env(),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
      child.stderr.resume();
      type Answer = { id?: unknown; result?: { isError?: boolean; structuredContent?: { exitCode: number; stdout: string; stderr: string } } };
      const answers = new Map<unknown, Answer>();
      let buffer = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const message = JSON.parse(buffer.slice(0, nl)) as Answer;
          if ('id' in message) answers.set(message.id, message);
          buffer = buffer.slice(nl + 1);
        }
      });
      const line = (text: string): boolean => child.stdin.write(`${text}\n`);
      line(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 'init',
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      );
      await poll(() => answers.has('init'), 15_000);
      line('{"jsonrpc":"2.0","method":"notifications/initialized"}');
      const call = (id: number, args: string): string => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"alpha__echo","arguments":${args}}}`;
      // Written in one chunk with a line split across two writes: the bridge reads lines as the transport does.
      const refused: [number, string, string][] = [
        [1, '{"a":1,"a":2}', 'arguments.a'],
        [2, '{"n":[12345678901234567890]}', 'arguments.n[0]'],
        [3, '{"x":{"y":1e400}}', 'arguments.x.y'],
        [4, '{"a":{},"arguments":{"b":1}}', 'arguments'],
      ];
      const text =
        refused.map(([id, args]) => call(id, id === 4 ? '{"a":{}},"arguments":{"b":1}' : args)).join('\n') +
        '\n' +
        call(5, '{"a":1.0,"\\u00e9":"\\u2603","big":9007199254740992}');
      child.stdin.write(text.slice(0, text.length - 20));
      await new Promise((resolve) => setImmediate(resolve));
      line(text.slice(text.length - 20));
      await poll(() => [1, 2, 3, 4, 5].every((id) => answers.has(id)), 15_000);
      for (const [id, , path] of refused) {
        const result = answers.get(id)?.result;
        expect(result?.isError).toBe(true);
        expect(result?.structuredContent?.exitCode).toBe(65);
        expect(result?.structuredContent?.stderr).toContain(JSON.stringify(path));
      }
      expect(answers.get(5)?.result?.structuredContent).toMatchObject({ exitCode: 0, stdout: '{"a":1,"é":"☃","big":9007199254740992}' });
      child.stdin.end();
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(0);
    },
  );
});

describe('toolwire mcp start-up failures', () => {
  it('exits 77 when the server refuses the token, 69 when it is unreachable, 64 without a token', { timeout: 60_000 }, async () => {
    const wrong = join(dir, 'wrong.token');
    await writeFile(wrong, 'not-a-caller-token\n', { mode: 0o600 });
    const refused = await runOnce(['--server', info.mcpUrl, '--token-file', wrong]);
    expect(refused.code).toBe(77);
    expect(refused.stderr).toContain(`toolwire mcp: token refused by ${info.mcpUrl} (HTTP 401)`);
    expect(refused.stderr).not.toContain('not-a-caller-token');
    const unreachable = await runOnce(['--server', 'http://127.0.0.1:1/mcp', '--token-file', tokenFile, '--connect-timeout', '5000']);
    expect(unreachable.code).toBe(69);
    expect(unreachable.stderr).toMatch(/toolwire mcp: cannot reach server http:\/\/127\.0\.0\.1:1\/mcp: /);
    const none = await runOnce(['--server', info.mcpUrl]);
    expect(none.code).toBe(64);
    expect(none.stderr).toMatch(/no token: give --token-file, set TOOLWIRE_TOKEN/);
  });

  it('exits 77 for a token file others may read, without reading it', { timeout: 30_000 }, async () => {
    const open = join(dir, 'open.token');
    await writeFile(open, `${CALLER_TOKEN}\n`, { mode: 0o644 });
    const result = await runOnce(['--server', info.mcpUrl, '--token-file', open]);
    expect(result.code).toBe(77);
    expect(result.stderr).toMatch(/has mode 0644: group or others may read or write it; run: chmod 600/);
  });
});

describe('toolwire mcp when the answer to a call can no longer come', () => {
  /** A TCP proxy to the server's port: `cut()` drops every connection and stops listening (the server is lost); `back` counts bytes from the server. */
  async function proxy(): Promise<{ url: string; cut: () => void; back: () => number }> {
    const sockets = new Set<Socket>();
    let back = 0;
    const port = Number(new URL(info.mcpUrl).port);
    const server = createNetServer((down) => {
      const up = connect(port, '127.0.0.1');
      for (const s of [down, up]) {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => sockets.delete(s));
      }
      up.on('data', (chunk: Buffer) => (back += chunk.length));
      down.pipe(up).pipe(down);
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const cut = (): void => {
      server.close();
      for (const s of sockets) s.destroy();
    };
    cleanups.push(cut);
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, cut, back: () => back };
  }

  it('a call whose answer stream breaks (the server is lost) is answered at once with an error naming the server', { timeout: 30_000 }, async () => {
    const link = await proxy();
    const { client } = await stdioClient(['--server', link.url, '--token-file', tokenFile]);
    const before = link.back();
    const call = client.callTool({ name: 'alpha__wait', arguments: {} }).then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await poll(() => waits.started === 1, 10_000);
    await poll(() => link.back() > before, 10_000, 'the headers of the answer stream'); // the door holds them up to 1 s
    const cutAt = Date.now();
    link.cut();
    expect(await call).toMatch(/toolwire mcp: lost the server http:\/\/127\.0\.0\.1:\d+\/mcp during the request/);
    expect(Date.now() - cutAt).toBeLessThan(5_000);
  });

  it('a call whose caller token is revoked is stopped and answered with its 130 result before the session closes', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    const call = client.callTool({ name: 'alpha__wait', arguments: {} });
    await poll(() => waits.started === 1, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past the door's answer hold: the answer stream is open
    await server.updateCredentials([{ name: 'alpha', token: HOST_TOKEN }], []);
    await poll(() => waits.stopped === 1, 10_000);
    const result = (await call) as { isError?: boolean; content: { type: string; text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(/^Exit code: 130\n/);
  });

  it('a call whose session the server closes at once (its door closed) is answered with an error, not left waiting', { timeout: 30_000 }, async () => {
    const { client } = await stdioClient();
    const call = client.callTool({ name: 'alpha__wait', arguments: {} }).then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await poll(() => waits.started === 1, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past the door's answer hold: the answer stream is open
    await server.mcp.close(); // no wait for answers: the session's streams end without them
    await poll(() => waits.stopped === 1, 10_000);
    expect(await call).toMatch(/toolwire mcp: the server ended the answer stream of the request without its answer/);
  });
});
