/**
 * Issue 16 acceptance: one call with a W3C `traceparent` through MCP → server → a real `toolwire
 * host` process → a subprocess tool carries one call id and one trace id everywhere: the server's
 * log, the host's log, the tool's environment, `output.json` and the metrics (exemplar).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolwireServer } from '@toolwire/server';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '../../../test/source-node.js';

const here = dirname(fileURLToPath(import.meta.url));
const main = join(here, '..', 'src', 'main.ts');
const HOST_TOKEN = 'obs-host-token-aaaaaaaaaaaaaaaaaaaaaa';
const CALLER_TOKEN = 'obs-caller-token-cccccccccccccccccccc';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const TRACESTATE = 'vendor=opaque';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Log lines (pino JSON) written to `stream`, parsed as they come. */
function captureLines(stream: NodeJS.ReadableStream): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    rest += chunk;
    let nl;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a JSON line
      }
    }
  });
  return lines;
}

/** Poll `check` every 20 ms until it returns a value, for at most `ms`. */
async function until<T>(check: () => T | undefined, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function startAll(): Promise<{
  server: ToolwireServer;
  url: string;
  mcpUrl: string;
  base: string;
  serverLog: Record<string, unknown>[];
  hostLog: Record<string, unknown>[];
  hostPid: number | undefined;
  records: string;
}> {
  const dir = await mkdtemp(join(tmpdir(), 'toolwire-obs-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const records = join(dir, 'records');
  const logStream = new PassThrough();
  const serverLog = captureLines(logStream);
  const server = new ToolwireServer({
    hosts: [{ name: 'alpha', token: HOST_TOKEN }],
    callers: [{ name: 'agent', token: CALLER_TOKEN }],
    recordDir: records,
    logger: pino({ level: 'info' }, logStream),
  });
  const info = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  const manifest = join(dir, 'tools.json');
  await writeFile(
    manifest,
    JSON.stringify({
      schema: 1,
      tools: {
        env: {
          description: 'prints its call id, trace context and pid',
          input_schema: { type: 'object' },
          command: ['sh', '-c', 'printf "%s|%s|%s|%s" "$TOOLWIRE_CALL_ID" "$TRACEPARENT" "$TRACESTATE" "$$"'],
        },
      },
    }),
  );
  const host: ChildProcess = spawn(
    process.execPath,
    [
      ...SOURCE_NODE_ARGS,
      main,
      'host',
      '--manifest',
      manifest,
      '--server',
      info.url,
      '--log-format',
      'json',
      '--log-level',
      'info',
      '--metrics-listen',
      '127.0.0.1:0',
    ],
    {
      env: { ...process.env, TOOLWIRE_TOKEN: HOST_TOKEN, TRACEPARENT: '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  cleanups.push(async () => {
    if (host.exitCode === null && host.signalCode === null) {
      host.kill('SIGKILL');
      await once(host, 'exit');
    }
  });
  const hostLog = captureLines(host.stderr!);
  await until(() => (server.router.tools().some((t) => t.name === 'alpha__env') ? true : undefined), 'the host to advertise');
  return { server, url: info.url, mcpUrl: info.mcpUrl, base: info.mcpUrl.replace(/\/mcp$/, ''), serverLog, hostLog, hostPid: host.pid, records };
}

describe('observability: one call id and one trace id end to end (issue 16)', () => {
  it('a call with _meta.traceparent through MCP, server, host and subprocess has the same call id and trace id in both logs, the tool env, output.json and the metrics', async () => {
    const { mcpUrl, base, serverLog, hostLog, hostPid, records } = await startAll();
    const client = new Client({ name: 'obs-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER_TOKEN}` } } }));
    cleanups.push(() => client.close());

    const result = await client.callTool({ name: 'alpha__env', arguments: {}, _meta: { traceparent: TRACEPARENT, tracestate: TRACESTATE } });
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    const [callId, toolTraceparent, toolTracestate, toolPid] = text.replace(/^Exit code: 0\n/, '').split('|');
    expect(callId).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    // The tool's environment: the call's own id and the caller's trace (not the host's inherited TRACEPARENT).
    expect(toolTraceparent).toBe(TRACEPARENT);
    expect(toolTracestate).toBe(TRACESTATE);

    // The server's one info line for the call.
    const serverLine = await until(() => serverLog.find((l) => l.msg === 'call ended' && l.call === callId), 'the server log line');
    expect(serverLine).toMatchObject({ level: 30, call: callId, tool: 'alpha__env', host: 'alpha', agent: 'agent', exitCode: 0, trace: TRACE_ID });
    expect(serverLine.wire).toEqual(expect.any(String));
    expect(typeof serverLine.ms).toBe('number');
    expect(serverLine.bytesOut).toBe(Buffer.byteLength(text.replace(/^Exit code: 0\n/, '')));

    // The host's one info line for the call: same call id, and the wire id the server logged.
    const hostLine = await until(() => hostLog.find((l) => l.msg === 'toolwire: call ended' && l.call === callId), 'the host log line');
    expect(hostLine).toMatchObject({ level: 30, call: callId, wire: serverLine.wire, tool: 'env', exitCode: 0, trace: TRACE_ID });
    // …with the pid of the tool's process (pino's own `pid` is the host's).
    expect(hostLine.toolPid).toBe(Number(toolPid));
    expect(hostLine.pid).toBe(hostPid);

    // output.json in the call's record folder (named by the same id).
    const output = JSON.parse(await readFile(join(records, 'agent', callId!, 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output).toMatchObject({ id: callId, wireId: serverLine.wire, traceparent: TRACEPARENT, tracestate: TRACESTATE, exitCode: 0 });

    // The metrics: the call counted by tool, host and exit code; the duration exemplar names the call and the trace.
    const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${CALLER_TOKEN}` } });
    expect(response.status).toBe(200);
    const metrics = await response.text();
    expect(metrics).toContain('toolwire_calls_total{tool="alpha__env",host="alpha",exit_code="0"} 1');
    expect(metrics).toMatch(new RegExp(`toolwire_call_duration_seconds_bucket\\{[^}]*\\} 1 # \\{trace_id="${TRACE_ID}",call_id="${callId}"\\}`));

    // The host's own metrics on its --metrics-listen address (no token): the call by tool and exit code, the exemplar.
    const listening = await until(() => hostLog.find((l) => l.msg === 'toolwire: metrics listening'), 'the host metrics listener');
    const hostMetrics = await (await fetch(String(listening.url))).text();
    expect(hostMetrics).toContain('toolwire_host_calls_total{tool="env",exit_code="0"} 1');
    expect(hostMetrics).toContain('toolwire_host_connected 1');
    expect(hostMetrics).toMatch(new RegExp(`toolwire_host_call_duration_seconds_bucket\\{[^}]*\\} 1 # \\{trace_id="${TRACE_ID}",call_id="${callId}"\\}`));

    // Never a token or the input at info.
    const all = JSON.stringify(serverLog) + JSON.stringify(hostLog);
    expect(all).not.toContain(CALLER_TOKEN);
    expect(all).not.toContain(HOST_TOKEN);
  });
});
