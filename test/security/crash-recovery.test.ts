/**
 * Issue 11 §5 — a server crash does not lose the story. A real `toolwire serve` with a record
 * folder is SIGKILLed while MCP calls are in flight (their `input.json` written, no `output.json`);
 * the next `toolwire serve` on the same folder completes each record with capture 69, the reason
 * line and `interrupted: true`, logs how many it closed, and leaves no temp file.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, rawAdvertise, rawHost, spawnTs, tempDir, waitFor, waitForText } from '../helpers.js';

afterEach(cleanup);

const CALLS = 3;

/** Start `toolwire serve --config config` and resolve with the process and its ws:// URL. */
async function serve(config: string, home: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnTs([cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--log-level', 'info'], { TOOLWIRE_HOME: home });
  const [, url] = await waitForText(child.stdout!, /tool hosts connect to\s+(ws:\/\/127\.0\.0\.1:\d+)/);
  return { child, url: url! };
}

/** One JSON-RPC POST to the MCP door (the response is not awaited past its headers). */
function post(mcpUrl: string, body: unknown, session: string | undefined, signal: AbortSignal): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${CALLER_TOKEN}`,
      ...(session !== undefined && { 'mcp-session-id': session }),
    },
    body: JSON.stringify(body),
    signal,
  });
}

/** Call folders under `<records>/agent` that hold `input.json`, and which of them hold `output.json`. */
async function records(dir: string): Promise<{ id: string; files: string[] }[]> {
  const ids = await readdir(join(dir, 'agent')).catch(() => [] as string[]);
  return Promise.all(ids.map(async (id) => ({ id, files: (await readdir(join(dir, 'agent', id))).sort() })));
}

describe('crash recovery of disk records', () => {
  it('a SIGKILLed server’s in-flight calls are closed 69 + interrupted at the next start, and the count is logged', async () => {
    const dir = await tempDir();
    const recordDir = join(dir, 'records');
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }], recordDir }));

    // 1. A server, a host whose tool never answers, and CALLS calls in flight.
    const first = await serve(config, dir);
    const host = await rawHost(first.url);
    await rawAdvertise(host, [{ name: 'hang', inputSchema: { type: 'object' } }]);
    const mcpUrl = `${first.url.replace('ws://', 'http://')}/mcp`;
    const calls = new AbortController();
    defer(() => calls.abort());
    const init = await post(
      mcpUrl,
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      undefined,
      calls.signal,
    );
    const session = init.headers.get('mcp-session-id') ?? undefined;
    await init.text();
    expect(session).toBeDefined();
    await (await post(mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, session, calls.signal)).text();
    for (let i = 1; i <= CALLS; i++) {
      void post(mcpUrl, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'alpha__hang', arguments: { n: i } } }, session, calls.signal).catch(
        () => {},
      );
    }
    await waitFor(async () => (await records(recordDir)).filter((r) => r.files.includes('input.json')).length === CALLS, `${CALLS} input.json records`, 15_000);

    // 2. SIGKILL: nothing of the server runs after this, the records stay open.
    process.kill(-first.child.pid!, 'SIGKILL');
    await once(first.child, 'exit');
    calls.abort();
    const open = await records(recordDir);
    expect(open.map((r) => r.files)).toEqual(Array(CALLS).fill(['input.json']));

    // 3. The next start closes them and says how many.
    const second = spawnTs([cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--log-level', 'info'], { TOOLWIRE_HOME: dir });
    const [line] = await waitForText(second.stderr!, /\{[^\n]*closed \d+ disk record\(s\) of calls interrupted by an earlier server stop[^\n]*\}/);
    const logged = JSON.parse(line) as Record<string, unknown>;
    expect(logged).toMatchObject({
      level: 30,
      closed: CALLS,
      failed: 0,
      recordDir,
      msg: `closed ${CALLS} disk record(s) of calls interrupted by an earlier server stop`,
    });
    await waitForText(second.stdout!, /tool hosts connect to/);

    for (const { id } of open) {
      const folder = join(recordDir, 'agent', id);
      expect((await readdir(folder)).sort()).toEqual(['input.json', 'output.json']);
      const input = JSON.parse(await readFile(join(folder, 'input.json'), 'utf8')) as { name: string };
      expect(input.name).toBe('alpha__hang');
      const output = JSON.parse(await readFile(join(folder, 'output.json'), 'utf8')) as Record<string, unknown>;
      expect(output).toMatchObject({
        stdout: '',
        stderr: 'toolwire: the server stopped while the call was in flight\n',
        exitCode: 69,
        failure: 'unavailable',
        interrupted: true,
      });
      expect(Date.parse(output.startedAt as string)).toBeLessThanOrEqual(Date.parse(output.endedAt as string));
      expect((await stat(join(folder, 'output.json'))).mode & 0o777).toBe(0o600);
    }
  });
});
