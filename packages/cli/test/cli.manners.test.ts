/**
 * CLI manners (issue 9, item 8): `--version` and `<command> --help`; misuse answered with one line
 * naming the problem plus the usage line; the nearest known flag or command suggested; qualified
 * tool names suggested for a bare one; `host --log-level`; `serve` on a port in use; a warning for a
 * listen address other than loopback without TLS. Also what `toolwire call` puts on the wire. Real
 * processes where the behaviour is the process's (exit status, what reaches stderr); 127.0.0.1, port 0.
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ToolHost } from '@toolwire/client';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { callCommand, callUsage, suggestTools } from '../src/commands/call.js';
import { hostCommand, hostUsage } from '../src/commands/host.js';
import { mcpCommand } from '../src/commands/mcp.js';
import { serveCommand, serveUsage } from '../src/commands/serve.js';
import { statusCommand } from '../src/commands/status.js';
import { toolsCommand, toolsUsage } from '../src/commands/tools.js';
import { isLoopback } from '../src/loopback.js';
import { editDistance, nearest } from '../src/suggest.js';
import { FakeDoor } from './helpers/fake-door.js';
import { cliSandbox } from './helpers/sandbox.js';
import { poll } from '../../client/test/helpers/process.js';

const TOKEN = 'caller-token-0123456789';
const HOST_TOKEN = 'host-token-0123456789';
const silent = pino({ level: 'silent' });

const sandbox = cliSandbox('cli-manners');
const { cleanups, io, toolwire } = sandbox;

describe('nearest word', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one edit', () => {
    expect(editDistance('timeout', 'timeout')).toBe(0);
    expect(editDistance('timout', 'timeout')).toBe(1);
    expect(editDistance('tiemout', 'timeout')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearest('--timout', ['--server', '--timeout', '--token'])).toBe('--timeout');
    expect(nearest('--zzzzzz', ['--server', '--timeout'])).toBeUndefined();
    expect(nearest('cal', ['serve', 'host', 'tools', 'call'])).toBe('call');
  });

  it('suggests the qualified names of a bare tool name, else names within two edits', () => {
    const names = ['alpha__read_file', 'beta__read_file', 'alpha__sleep', 'alpha__list_dir'];
    expect(suggestTools('read_file', names)).toEqual(['alpha__read_file', 'beta__read_file']);
    expect(suggestTools('alpha__read_fil', names)).toEqual(['alpha__read_file']);
    expect(suggestTools('slep', names)).toEqual(['alpha__sleep']);
    expect(suggestTools('nothing_like_it', names)).toEqual([]);
  });
});

describe('--version and --help', () => {
  it('toolwire --version prints the version and exits 0 (a real process)', async () => {
    const { code, stdout } = await toolwire(['--version']).done;
    expect(code).toBe(0);
    expect(stdout).toMatch(/^toolwire \d+\.\d+\.\d+\n$/);
  });

  it('every command prints its help on stdout with --help and exits 0; the first line is its usage line', async () => {
    const cases: [string, (t: ReturnType<typeof io>) => Promise<number>, string][] = [
      ['call', (t) => callCommand(['--help'], t), callUsage],
      ['tools', (t) => toolsCommand(['-h'], t), toolsUsage],
      ['host', (t) => hostCommand(['--help'], t), hostUsage],
    ];
    for (const [name, command, usage] of cases) {
      const t = io();
      expect(await command(t)).toBe(0);
      expect(t.out()).toBe(usage);
      expect(usage.split('\n')[0]).toMatch(new RegExp(`^usage: toolwire ${name} .*\\[options\\]$`));
    }
    const out = new PassThrough();
    let text = '';
    out.setEncoding('utf8').on('data', (d: string) => (text += d));
    expect(await serveCommand(['--help'], { stdout: out, stderr: new PassThrough(), env: { TOOLWIRE_HOME: sandbox.home } })).toBe(0);
    expect(text).toBe(serveUsage);
    expect(serveUsage.split('\n')[0]).toBe('usage: toolwire serve [options]');
  });
});

describe('misuse: one line naming the problem, the usage line, and where the options are', () => {
  it('serve and host quote at most 80 characters of a bad --log-level, --log-format or --metrics-listen, escaped', async () => {
    const long = `\u001b[2J${'x'.repeat(100_000)}`;
    for (const flag of ['--log-level', '--log-format', '--metrics-listen']) {
      const errs: string[] = [];
      for (const run of [
        (t: ReturnType<typeof io>) => serveCommand([flag, long], { stdout: new PassThrough(), stderr: t.stderr, env: { TOOLWIRE_HOME: sandbox.home } }),
        (t: ReturnType<typeof io>) => hostCommand(['--manifest', 'm.json', flag, long], t),
      ]) {
        const t = io();
        expect(await run(t), flag).toBe(64);
        errs.push(t.err().split('\n')[0]!);
      }
      for (const line of errs) {
        expect(line, flag).toContain(flag);
        expect(line.length, flag).toBeLessThan(300);
        expect(line, flag).not.toContain('\u001b[');
      }
    }
  });

  it('call without NAME', async () => {
    const t = io();
    expect(await callCommand([], t)).toBe(64);
    expect(t.err()).toBe('toolwire call: NAME is required\nusage: toolwire call NAME [INPUT_JSON | -] [options]\nRun "toolwire call --help" for the options.\n');
  });

  it('an unknown flag names the nearest known flag of that command', async () => {
    const call = io();
    expect(await callCommand(['x', '--timout', '5'], call)).toBe(64);
    expect(call.err().split('\n')[0]).toBe('toolwire call: unknown option --timout; did you mean --timeout?');
    const tools = io();
    expect(await toolsCommand(['--jsno'], tools)).toBe(64);
    expect(tools.err()).toBe(
      'toolwire tools: unknown option --jsno; did you mean --json?\nusage: toolwire tools [options]\nRun "toolwire tools --help" for the options.\n',
    );
    const host = io();
    expect(await hostCommand(['--manfest', 'm.json'], host)).toBe(64);
    expect(host.err().split('\n')[0]).toBe('toolwire host: unknown option --manfest; did you mean --manifest?');
    const far = io();
    expect(await callCommand(['x', '--zzzzzz'], far)).toBe(64);
    expect(far.err().split('\n')[0]).toBe('toolwire call: unknown option --zzzzzz');
  });

  it('a flag without its value, and an unexpected argument', async () => {
    const t = io();
    expect(await callCommand(['x', '--timeout'], t)).toBe(64);
    expect(t.err().split('\n')[0]).toBe('toolwire call: option --timeout needs a value');
    const extra = io();
    expect(await toolsCommand(['extra'], extra)).toBe(64);
    expect(extra.err().split('\n')[0]).toBe('toolwire tools: unexpected argument "extra"');
    expect(extra.err().split('\n')).toHaveLength(4); // three lines and the final newline
  });

  it('a value that starts with "-" is refused with the --flag=VALUE form named, and that form passes it', async () => {
    const t = io();
    expect(await toolsCommand(['--token', '-abc_def'], t)).toBe(64);
    expect(t.err().split('\n')[0]).toBe('toolwire tools: option --token needs a value (a value that starts with "-" is written --token=VALUE)');
    const flagNext = io();
    expect(await toolsCommand(['--token', '--json'], flagNext)).toBe(64);
    expect(flagNext.err().split('\n')[0]).toBe('toolwire tools: option --token needs a value');
  });

  it('a negative number as a value is named as a bad value by the command itself, as any other bad value of that flag', async () => {
    const t = io();
    expect(await callCommand(['x', '--timeout', '-5'], t)).toBe(64);
    expect(t.err().split('\n')[0]).toBe('toolwire call: --timeout must be a positive integer (ms), got "-5"; the largest is 2147483647');
    const c = io();
    expect(await toolsCommand(['--connect-timeout', '-1'], c)).toBe(64);
    expect(c.err().split('\n')[0]).toBe('toolwire tools: --connect-timeout must be a positive integer (ms), got "-1"; the largest is 2147483647');
    const s = io();
    expect(await statusCommand(['--watch', '--interval', '-1'], s)).toBe(64);
    expect(s.err().split('\n')[0]).toBe('toolwire status: --interval must be a positive integer (ms), got "-1"; the largest is 2147483647');
    const m = io();
    expect(await mcpCommand(['--connect-timeout', '-1'], m)).toBe(64);
    expect(m.err().split('\n')[0]).toBe('toolwire mcp: --connect-timeout must be a positive integer (ms), got "-1"; the largest is 2147483647');
    // --max-queued takes 0, so the message must not say "positive".
    for (const [flag, min] of [
      ['--max-queued', 0],
      ['--max-concurrent', 1],
      ['--max-input-bytes', 1],
    ] as const) {
      const h = io();
      expect(await hostCommand(['--manifest', 'm.json', flag, '-1'], h)).toBe(64);
      expect(h.err().split('\n')[0]).toBe(`toolwire host: ${flag} must be a whole number ≥ ${min}, got "-1"`);
    }
  });

  it('input on stdin over the 16 MiB bound: "input too large", exit 64, nothing sent', async () => {
    const t = io({}, Buffer.alloc(16 * 1024 * 1024 + 1, 0x20));
    expect(await callCommand(['x', '-', '--server', 'http://127.0.0.1:9', '--token', 't'], t)).toBe(64);
    expect(t.err()).toBe('toolwire: input too large: standard input is longer than 16777216 bytes\n');
  });

  it('host with an http:// server names the flag, not the library option', async () => {
    const manifest = join(sandbox.home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: {} }));
    const t = io();
    expect(await hostCommand(['--manifest', manifest, '--server', 'http://127.0.0.1:9', '--token', 't'], t)).toBe(64);
    expect(t.err().split('\n')[0]).toMatch(/^toolwire host: --server must be a ws:\/\/ or wss:\/\/ URL/);
    expect(t.err()).not.toContain('ToolHostOptions');
  });

  it('host limit flags: a bad value names the flag, not the library option', async () => {
    const manifest = join(sandbox.home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: {} }));
    const base = ['--manifest', manifest, '--server', 'ws://127.0.0.1:9', '--token', 't'];
    const zero = io();
    expect(await hostCommand([...base, '--max-concurrent', '0'], zero)).toBe(64);
    expect(zero.err().split('\n')[0]).toBe('toolwire host: --max-concurrent must be a whole number ≥ 1, got "0"');
    const word = io();
    expect(await hostCommand([...base, '--max-queued', 'many'], word)).toBe(64);
    expect(word.err().split('\n')[0]).toBe('toolwire host: --max-queued must be a whole number ≥ 0, got "many"');
    const small = io();
    expect(await hostCommand([...base, '--max-input-bytes', '1000'], small)).toBe(64);
    expect(small.err().split('\n')[0]).toBe('toolwire host: --max-input-bytes must be an integer ≥ 16777216, got 1000');
    expect(small.err()).not.toContain('ToolHostOptions');
  });

  it('help with an unknown command is an unknown command', async () => {
    const { code, stderr } = await toolwire(['help', 'hots']).done;
    expect(code).toBe(64);
    expect(stderr.split('\n')[0]).toBe('toolwire: unknown command "hots"; did you mean "host"?');
  });

  it('serve with an unknown flag (a real process): the nearest flag, the usage line, exit 64', async () => {
    const { code, stderr } = await toolwire(['serve', '--lisen', '127.0.0.1:0']).done;
    expect(code).toBe(64);
    expect(stderr).toBe(
      'toolwire serve: unknown option --lisen; did you mean --listen?\nusage: toolwire serve [options]\nRun "toolwire serve --help" for the options.\n',
    );
  });

  it('an unknown command suggests the nearest command (a real process)', async () => {
    const { code, stderr } = await toolwire(['cal', 'x']).done;
    expect(code).toBe(64);
    expect(stderr).toBe('toolwire: unknown command "cal"; did you mean "call"?\nusage: toolwire <command> [options]\nRun "toolwire --help" for the commands.\n');
  });
});

describe('toolwire call: a bare tool name that exists only qualified', () => {
  async function serverWithHost(): Promise<number> {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: TOKEN }], logger: silent });
    cleanups.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    const host = new ToolHost({ server: url, token: HOST_TOKEN, logger: silent })
      .tool('read_file', { inputSchema: { type: 'object' } }, () => 'contents\n')
      .tool('sleep', { inputSchema: { type: 'object' } }, () => '');
    cleanups.push(() => host.close());
    await host.start();
    return Number(new URL(url).port);
  }

  it('the server answers 127 "no such tool"; the command suggests the qualified name and keeps 127', async () => {
    const port = await serverWithHost();
    const t = io();
    expect(await callCommand(['read_file', '--server', `127.0.0.1:${port}`, '--token', TOKEN], t)).toBe(127);
    expect(t.err()).toBe('toolwire: no such tool "read_file"\ntoolwire: did you mean alpha__read_file?\n');
    const ok = io();
    expect(await callCommand(['alpha__read_file', '--server', `127.0.0.1:${port}`, '--token', TOKEN], ok)).toBe(0);
    expect(ok.out()).toBe('contents\n');
  });

  it('lists the tools only after "no such tool": a call that ran, or a tool exiting 127 itself, lists nothing', async () => {
    const door = await FakeDoor.start(TOKEN, [{ name: 'alpha__read_file', inputSchema: { type: 'object' } }]);
    cleanups.push(() => door.close());
    const server = ['--server', `127.0.0.1:${door.port}`, '--token', TOKEN];
    expect(await callCommand(['alpha__read_file', ...server], io())).toBe(0);
    door.answer = () => ({ content: [], structuredContent: { stdout: '', stderr: 'sh: frob: not found\n', exitCode: 127 } });
    expect(await callCommand(['alpha__read_file', ...server], io())).toBe(127);
    expect(door.listed).toBe(0);
    door.answer = (call) => ({ content: [], structuredContent: { stdout: '', stderr: `toolwire: no such tool "${call.name}"\n`, exitCode: 127 } });
    const t = io();
    expect(await callCommand(['read_file', ...server], t)).toBe(127);
    expect(door.listed).toBe(1);
    expect(t.err()).toBe('toolwire: no such tool "read_file"\ntoolwire: did you mean alpha__read_file?\n');
  });
});

describe('toolwire call on the wire', () => {
  it('initialize, then notifications/initialized and tools/call, then DELETE: no session is left open', async () => {
    const door = await FakeDoor.start(TOKEN, []);
    cleanups.push(() => door.close());
    expect(await callCommand(['alpha__x', '--server', `127.0.0.1:${door.port}`, '--token', TOKEN], io())).toBe(0);
    expect(door.requests[0]).toEqual({ http: 'POST', rpc: ['initialize'] });
    expect(
      door.requests
        .slice(1, 3)
        .map((r) => r.rpc[0])
        .sort(),
    ).toEqual(['notifications/initialized', 'tools/call']);
    expect(door.requests.slice(3)).toEqual([{ http: 'DELETE', rpc: [] }]);
    expect(door.openSessions).toBe(0);
  });

  it('toolwire tools closes its session too', async () => {
    const door = await FakeDoor.start(TOKEN, []);
    cleanups.push(() => door.close());
    expect(await toolsCommand(['--server', `127.0.0.1:${door.port}`, '--token', TOKEN], io())).toBe(0);
    expect(door.requests.map((r) => r.rpc[0] ?? r.http).sort()).toEqual(['DELETE', 'initialize', 'notifications/initialized', 'tools/list']);
    expect(door.openSessions).toBe(0);
  });
});

describe('toolwire host --log-level', () => {
  it('refuses a level it does not know, from the flag or from $TOOLWIRE_LOG_LEVEL', async () => {
    const flag = io();
    expect(await hostCommand(['--manifest', 'm.json', '--log-level', 'loud'], flag)).toBe(64);
    expect(flag.err().split('\n')[0]).toBe('toolwire host: --log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"');
    const env = io({ TOOLWIRE_LOG_LEVEL: 'chatty' });
    expect(await hostCommand(['--manifest', 'm.json'], env)).toBe(64);
    expect(env.err().split('\n')[0]).toMatch(/^toolwire host: \$TOOLWIRE_LOG_LEVEL must be one of .*got "chatty"$/);
  });

  it('--log-level warn keeps the info lines off stderr, and wins over $TOOLWIRE_LOG_LEVEL (a real process)', async () => {
    const server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], logger: silent });
    cleanups.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    const manifest = join(sandbox.home, 'tools.json');
    await writeFile(manifest, JSON.stringify({ schema: 1, tools: { say: { input_schema: { type: 'object' }, command: ['echo', 'hi'] } } }));
    const quiet = toolwire(['host', '--manifest', manifest, '--server', url, '--token', HOST_TOKEN, '--log-level', 'warn'], { TOOLWIRE_LOG_LEVEL: 'debug' });
    await poll(() => server.router.tools().some((t) => t.name === 'alpha__say'), 15_000, 'the host to advertise');
    quiet.child.kill('SIGTERM');
    const { code, stderr } = await quiet.done;
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/"level":(20|30)/);
  });
});

describe('toolwire serve', () => {
  it('a port in use: one line "port in use, try --listen HOST:PORT", no stack trace, exit 69 (a real process)', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as { port: number }).port;
    const { code, stdout, stderr } = await toolwire(['serve', '--listen', `127.0.0.1:${port}`]).done;
    expect(code).toBe(69);
    expect(stdout).toBe('');
    expect(stderr).toBe(`toolwire serve: cannot listen on 127.0.0.1:${port}: port in use (EADDRINUSE), try --listen HOST:PORT\n`);
  });

  it('warns that tokens travel in the clear when listening beyond loopback without TLS; not on loopback', async () => {
    for (const [listen, warned] of [
      ['0.0.0.0:0', true],
      ['127.0.0.1:0', false],
    ] as const) {
      const out = new PassThrough();
      const err = new PassThrough();
      let stdout = '';
      let stderr = '';
      out.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      err.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const stop = new AbortController();
      const exit = serveCommand(['--listen', listen, '--log-level', 'silent'], {
        stdout: out,
        stderr: err,
        env: { TOOLWIRE_HOME: sandbox.home },
        signal: stop.signal,
      });
      await poll(() => stdout.includes('listening') || undefined, 10_000, 'the banner');
      stop.abort();
      expect(await exit).toBe(0);
      if (warned) expect(stderr).toMatch(/^toolwire serve: warning: listening on 0\.0\.0\.0 without TLS: tokens and tool output travel in the clear; /);
      else expect(stderr).toBe('');
    }
  });

  it('without --config, SIGHUP is logged and ignored: the server keeps serving', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    let stderr = '';
    out.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    err.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const stop = new AbortController();
    const exit = serveCommand(['--listen', '127.0.0.1:0', '--log-level', 'warn'], {
      stdout: out,
      stderr: err,
      env: { TOOLWIRE_HOME: sandbox.home },
      signal: stop.signal,
    });
    await poll(() => stdout.includes('listening') || undefined, 10_000, 'the banner');
    process.emit('SIGHUP', 'SIGHUP');
    await poll(() => stderr.includes('SIGHUP ignored: nothing to reload without --config') || undefined, 5_000, 'the SIGHUP log line');
    const health = /health\s+(\S+)/.exec(stdout)?.[1];
    expect((await fetch(health!)).status).toBe(200);
    stop.abort();
    expect(await exit).toBe(0);
    expect(process.listenerCount('SIGHUP')).toBe(0);
  });

  it('a wildcard bind names "<this machine>" and the loopback URL in the banner, not 0.0.0.0', async () => {
    const out = new PassThrough();
    let stdout = '';
    out.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const stop = new AbortController();
    const exit = serveCommand(['--listen', '0.0.0.0:0', '--log-level', 'silent'], {
      stdout: out,
      stderr: new PassThrough(),
      env: { TOOLWIRE_HOME: sandbox.home },
      signal: stop.signal,
    });
    await poll(() => stdout.includes('listening') || undefined, 10_000, 'the banner');
    stop.abort();
    expect(await exit).toBe(0);
    expect(stdout).toMatch(/tool hosts connect to {2}ws:\/\/<this machine>:\d+ \(here: ws:\/\/127\.0\.0\.1:\d+\)/);
    expect(stdout).not.toContain('//0.0.0.0');
  });

  it('loopback is 127.0.0.0/8, ::1 and localhost; anything else is not', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', 'LOCALHOST']) expect(isLoopback(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'build-box.example', '::ffff:10.0.0.1']) expect(isLoopback(host)).toBe(false);
  });
});
