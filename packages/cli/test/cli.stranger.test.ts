/**
 * What a stranger trying the CLI hit (session 10): `toolwire call … | head` (the reader of stdout
 * leaves mid-call), millisecond flags past what a timer can hold, and what a refusal of the MCP door
 * says. Real processes where the behaviour is the process's (exit status,
 * what reaches stderr); a real ToolwireServer and ToolHost on 127.0.0.1, port 0.
 */
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolHost } from '@toolwire/client';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HttpStatusError } from '../src/caller/errors.js';
import { mcpFailure } from '../src/caller/failure.js';
import { callCommand } from '../src/commands/call.js';
import { mcpCommand } from '../src/commands/mcp.js';
import { statusCommand } from '../src/commands/status.js';
import { toolsCommand } from '../src/commands/tools.js';
import { MAX_MS } from '../src/ms.js';
import { cliSandbox } from './helpers/sandbox.js';
import { poll } from '../../client/test/helpers/process.js';

const TOKEN = 'caller-token-0123456789';
const HOST_TOKEN = 'host-token-0123456789';
const silent = pino({ level: 'silent' });

const { cleanups, io, toolwire } = cliSandbox('cli-stranger');

describe('toolwire call whose stdout reader goes away (`toolwire call … | head`)', () => {
  it('stops the call and exits 130 with one line naming the closed stdout, not an EPIPE stack trace', async () => {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    const { url, mcpUrl } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    let aborted = false;
    const host = new ToolHost({ server: url, token: HOST_TOKEN, logger: silent }).tool('yes', { inputSchema: { type: 'object' } }, async (_input, ctx) => {
      // Writes lines until stopped, like `yes`.
      while (!ctx.signal.aborted) await ctx.write('stdout', 'y\n'.repeat(4096));
      aborted = true;
      return '';
    });
    cleanups.push(() => host.close());
    await host.start();
    await poll(() => server.router.tools().length === 1, 10_000);

    const { child, done } = toolwire(['call', 'alpha__yes', '--server', mcpUrl, '--token', TOKEN]);
    await once(child.stdout!, 'data');
    child.stdout!.destroy(); // the reader leaves, as `head` does after its lines
    const { code, stderr } = await done;

    expect(stderr).not.toMatch(/EPIPE|at .*\(node:/);
    expect(stderr).toBe('toolwire: stdout was closed (its reader went away); the call was stopped\n');
    expect(code).toBe(130);
    await poll(() => aborted, 10_000); // the tool was told to stop
  });
});

describe('millisecond flags past the largest timer (2^31 − 1 ms)', () => {
  it('call --timeout and --connect-timeout above it are misuse (64), not a give-up after 1 ms', async () => {
    for (const flag of ['--timeout', '--connect-timeout']) {
      const t = io();
      expect(await callCommand(['alpha__echo', '{}', '--server', 'http://127.0.0.1:9', '--token', TOKEN, flag, '99999999999999'], t)).toBe(64);
      expect(t.err()).toContain(`${flag} must be a positive integer (ms), got "99999999999999"; the largest is ${MAX_MS}`);
    }
  });

  it('status --watch --interval above it is misuse (64), not a snapshot request every 1 ms', async () => {
    const t = io();
    expect(await statusCommand(['--watch', '--interval', '99999999999999', '--server', 'http://127.0.0.1:9', '--token', TOKEN], t)).toBe(64);
    expect(t.err()).toContain(`--interval must be a positive integer (ms), got "99999999999999"; the largest is ${MAX_MS}`);
  });

  it('tools --connect-timeout above it is misuse (64)', async () => {
    const t = io();
    expect(await toolsCommand(['--connect-timeout', String(MAX_MS + 1), '--server', 'http://127.0.0.1:9', '--token', TOKEN], t)).toBe(64);
  });

  it('call --timeout of exactly 2^31 − 1 ms is accepted and the call runs (the wait for the answer, longer, is capped)', async () => {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    const { url, mcpUrl } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    const host = new ToolHost({ server: url, token: HOST_TOKEN, logger: silent }).tool('echo', { inputSchema: { type: 'object' } }, () => 'hi\n');
    cleanups.push(() => host.close());
    await host.start();
    await poll(() => server.router.tools().length === 1, 10_000);
    const t = io();
    expect(await callCommand(['alpha__echo', '{}', '--server', mcpUrl, '--token', TOKEN, '--timeout', String(MAX_MS)], t)).toBe(0);
    expect(t.out()).toBe('hi\n');
    expect(t.err()).toBe('');
  });
});

describe('a caller token that cannot travel in an HTTP header', () => {
  it('call, tools, status and mcp: misuse (64) with one line naming the token, not "cannot reach server" or 70', async () => {
    // A server that is up: the old answer blamed the network for what the token held.
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    const { mcpUrl } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    const line =
      'toolwire: the token must not hold whitespace or control characters (it travels as "Bearer <token>"); check --token, $TOOLWIRE_TOKEN or the credentials file\n';
    for (const bad of ['first-part\nsecond-part', 'first-part second-part', 'a\u0000b']) {
      for (const [name, run] of [
        ['call', (t: ReturnType<typeof io>) => callCommand(['alpha__echo', '{}', '--server', mcpUrl, '--token', bad], t)],
        ['tools', (t: ReturnType<typeof io>) => toolsCommand(['--server', mcpUrl, '--token', bad], t)],
        ['status', (t: ReturnType<typeof io>) => statusCommand(['--server', mcpUrl, '--token', bad], t)],
        ['mcp', (t: ReturnType<typeof io>) => mcpCommand(['--server', mcpUrl], t)],
      ] as const) {
        const t = io({ TOOLWIRE_TOKEN: bad }, '');
        expect(await run(t), `${name} ${JSON.stringify(bad)}`).toBe(64);
        expect(t.err(), name).toBe(line);
      }
    }
  });
});

describe('a refusal of the MCP door says what the server said', () => {
  it('a token that is not a caller token: 77, and the server advice to make a caller token', async () => {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    const { mcpUrl } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    const t = io();
    expect(await toolsCommand(['--server', mcpUrl, '--token', HOST_TOKEN], t)).toBe(77);
    expect(t.err()).toMatch(/^toolwire: token refused by http:\/\/127\.0\.0\.1:\d+\/mcp \(HTTP 401\): .*toolwire token add caller NAME/);
  });

  it('a 403 of the Host check names the Host, not the token; control characters of the server text are not printed', () => {
    const url = new URL('http://vm:7700/mcp');
    const hostCheck = mcpFailure(new HttpStatusError(403, 'Forbidden: Host "vm:7700" is not allowed here (DNS-rebinding protection)'), url);
    expect(hostCheck).toEqual({
      code: 77,
      message: 'toolwire: refused by http://vm:7700/mcp (HTTP 403): Forbidden: Host "vm:7700" is not allowed here (DNS-rebinding protection)\n',
    });
    expect(mcpFailure(new HttpStatusError(401, 'bad\u001b[31m token'), url).message).toBe(
      'toolwire: token refused by http://vm:7700/mcp (HTTP 401): bad?[31m token\n',
    );
    expect(mcpFailure(new HttpStatusError(401, ''), url).message).toBe('toolwire: token refused by http://vm:7700/mcp (HTTP 401)\n');
  });
});

describe('toolwire host --server with a URL the WebSocket client cannot dial', () => {
  it('a ws:// URL with a fragment (#…) is misuse (64) with one line, not an uncaught SyntaxError (exit 1)', async () => {
    for (const server of ['ws://127.0.0.1:9/#frag', 'ws://127.0.0.1:9#']) {
      const { done } = toolwire([
        'host',
        '--server',
        server,
        '--token',
        HOST_TOKEN,
        '--manifest',
        fileURLToPath(new URL('../../../examples/tools.json', import.meta.url)),
      ]);
      const { code, stderr } = await done;
      expect(stderr).not.toMatch(/SyntaxError|at .*\(/);
      expect(stderr.split('\n')[0]).toBe(`toolwire host: --server must be a ws:// or wss:// URL without a #fragment, got ${JSON.stringify(server)}`);
      expect(code).toBe(64);
    }
  });
});

describe('toolwire call with an INPUT_JSON that JSON.parse would hand on changed', () => {
  it('a repeated key or a number a double cannot hold is refused 65 by the server with the reason, as at the MCP door; the tool does not run', async () => {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    const { url, mcpUrl } = await server.listen(0, '127.0.0.1');
    cleanups.push(() => server.close());
    const seen: unknown[] = [];
    const host = new ToolHost({ server: url, token: HOST_TOKEN, logger: silent }).tool('echo', { inputSchema: { type: 'object' } }, (input) => {
      seen.push(input);
      return `${JSON.stringify(input)}\n`;
    });
    cleanups.push(() => host.close());
    await host.start();
    await poll(() => server.router.tools().length === 1, 10_000);
    for (const [input, path] of [
      ['{"path":"a","path":"b"}', 'arguments.path'],
      ['{"n":12345678901234567890}', 'arguments.n'],
      ['{"list":[{"a":1,"a":2}]}', 'arguments.list[0].a'],
    ] as const) {
      const t = io();
      expect(await callCommand(['alpha__echo', input, '--server', mcpUrl, '--token', TOKEN], t), input).toBe(65);
      expect(t.err(), input).toContain(path);
    }
    expect(seen).toEqual([]);
    // Same values in another spelling pass as those values (README "Connect an agent").
    const t = io();
    expect(await callCommand(['alpha__echo', '{"x":1.0,"y":1e2}', '--server', mcpUrl, '--token', TOKEN], t)).toBe(0);
    expect(t.out()).toBe('{"x":1,"y":100}\n');
  });
});

describe('toolwire host given a binary file as its manifest or MCP config', () => {
  it('exits 65 with one printable line: the parser quoting the file does not put its control bytes on the terminal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolwire-binary-config-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const binary = join(dir, 'config.bin');
    await writeFile(binary, Buffer.from([0x1b, 0x5b, 0x32, 0x4a, 0x1b, 0x5d, 0x30, 0x3b, 0x78, 0x07, 0x00, 0x9b, 0x0a, 0x41]));
    for (const flag of ['--mcp-config', '--manifest']) {
      const { done } = toolwire(['host', '--server', 'ws://127.0.0.1:9', '--token', HOST_TOKEN, flag, binary]);
      const { code, stderr } = await done;
      expect(code, flag).toBe(65);
      expect(stderr, flag).toMatch(/^toolwire host: manifest .*config\.bin: .*\n$/);
      // eslint-disable-next-line no-control-regex
      expect(stderr.slice(0, -1), flag).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    }
  });
});
