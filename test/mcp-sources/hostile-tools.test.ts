/**
 * An MCP server whose tools/list holds tools the MCP schema refuses (a non-object inputSchema, no
 * name, annotations of the wrong shape): each such tool is refused on its own with a logged reason,
 * as a refused schema is for any host (README "Advertised schemas"), and the server's other tools
 * are served; the server is not treated as failed and restarted. A listing without a tools array
 * fails the start with one line.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, repoRoot, tempDir, waitFor } from '../helpers.js';
import { hostWith, run } from './harness.js';

afterEach(cleanup);

const RAW = join(repoRoot, 'packages', 'client', 'test', 'fixtures', 'mcp-raw.mjs');

describe('an MCP server listing tools the MCP schema refuses', () => {
  it('serves its valid tools and refuses each bad one with a logged reason, without restarting the server', async () => {
    const startLog = join(await tempDir('toolwire-mcp-raw-'), 'starts.log');
    const { started, log } = await hostWith({ raw: { command: process.execPath, args: [RAW, 'badtools'], env: { MCP_FAKE_LOG: startLog } } }, [
      'alpha__raw_ok',
      'alpha__raw_ok2',
    ]);
    const names = started.server.router.tools().map((t) => t.name);
    expect(names.filter((n) => n.startsWith('alpha__raw_')).sort()).toEqual(['alpha__raw_ok', 'alpha__raw_ok2']);
    const result = await run(started, 'alpha__raw_ok');
    expect(result.capture.exitCode).toBe(0);
    expect(Buffer.from(result.capture.stdout).toString()).toBe('called ok');

    const warnings = log.entries.filter((e) => e.level === 'warn').map((e) => String(e.msg));
    for (const tool of ['"stringly"', '(no name)', '"badannotations"', '"badhint"']) {
      expect(
        warnings.some((w) => w.startsWith(`toolwire: MCP server raw: tool ${tool} not served: `) && !w.includes('\n')),
        tool,
      ).toBe(true);
    }
    expect(log.errors()).toEqual([]);
    expect(readFileSync(startLog, 'utf8').trim().split('\n')).toHaveLength(1); // started once, never restarted
  });

  it('a tools/list result without a tools array: the start fails with one line naming it', async () => {
    const { log } = await hostWith({ raw: { command: process.execPath, args: [RAW, 'notools'] } }, []);
    const failed = await waitFor(() => log.errors().find((e) => String(e.msg).includes('MCP server raw did not start')), 'the failed start', 10_000);
    expect(String(failed.msg)).toBe('toolwire: MCP server raw did not start: tools/list answered without a tools array');
  });
});

describe('an MCP server answering a call with a response that is not JSON-RPC', () => {
  it('("result": null, a string, an array): the call ends 70 at once with the reason, not 124 at its deadline; the server keeps serving', async () => {
    const { started } = await hostWith({ raw: { command: process.execPath, args: [RAW, 'badanswer'] } }, ['alpha__raw_null', 'alpha__raw_ok']);
    for (const tool of ['null', 'string', 'array']) {
      const result = await run(started, `alpha__raw_${tool}`, {}, { deadlineMs: 5_000 });
      expect(result.capture.exitCode, tool).toBe(70);
      expect(Buffer.from(result.capture.stderr).toString(), tool).toMatch(/^toolwire: MCP server raw failed the call: .*not a JSON-RPC/);
    }
    const ok = await run(started, 'alpha__raw_ok');
    expect(ok.capture.exitCode).toBe(0);
  });
});

describe('an MCP server failing a call with a hostile error message', () => {
  it('(100 KB, terminal escapes, line breaks): the reason line is one line of at most 1024 of its characters, escapes shown as \\uXXXX', async () => {
    const { started } = await hostWith({ raw: { command: process.execPath, args: [RAW, 'badanswer'] } }, ['alpha__raw_hostile']);
    const result = await run(started, 'alpha__raw_hostile', {}, { deadlineMs: 5_000 });
    expect(result.capture.exitCode).toBe(70);
    const stderr = Buffer.from(result.capture.stderr).toString();
    expect(stderr).toMatch(/^toolwire: MCP server raw failed the call: .*boom\\u001b\[2J\\u001b\]52;c;cHduZWQ=\\u0007\\u000asecond line\\u000d\\u000axxx/);
    expect([...stderr].filter((c) => c < ' ' && c !== '\n')).toEqual([]); // no control character but the line end
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr.length).toBeLessThan(1024 + 200);
  });
});
