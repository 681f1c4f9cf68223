/**
 * `/metrics` (issue 16): parsed OpenMetrics text; the counts match the calls made, by exit code;
 * the endpoint needs a caller token; `metrics: false` turns it off. And the trace context rules of
 * the executor and the MCP door's HTTP header.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolwireServer, type ToolwireServerOptions } from '../src/index.js';

const CALLER = 'metrics-caller-token-ccccccccccccccccc';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${TRACE_ID}-b7ad6b7169203331-01`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** A server whose local tools (`fallback`) answer `exit<N>` with exit code N, and record what they were routed. */
async function start(options: Pick<ToolwireServerOptions, 'metrics' | 'recordDir' | 'toolControl'> = {}) {
  const routed: { traceparent?: string | undefined; id: string }[] = [];
  const server = new ToolwireServer({
    callers: [{ name: 'agent', token: CALLER }],
    ...options,
    fallback: (call) => {
      routed.push({ id: call.id, traceparent: call.traceparent });
      const m = /^exit(\d+)$/.exec(call.name);
      return Promise.resolve(m ? { stdout: Buffer.from('out'), stderr: new Uint8Array(0), exitCode: Number(m[1]) } : undefined);
    },
  });
  const info = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return { server, base: info.mcpUrl.replace(/\/mcp$/, ''), mcpUrl: info.mcpUrl, routed };
}

/** Samples of an OpenMetrics text: `name{labels}` → value (exemplars dropped). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sample = line.split(' # ')[0]!;
    const at = sample.lastIndexOf(' ');
    out.set(sample.slice(0, at), Number(sample.slice(at + 1)));
  }
  return out;
}

/** GET /metrics with `token` (`null`: no Authorization header). */
async function scrape(base: string, token: string | null = CALLER): Promise<Response> {
  return fetch(`${base}/metrics`, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });
}

describe('/metrics', () => {
  it('counts calls by tool and exit code, with the families of the issue, in OpenMetrics text', async () => {
    const { server, base } = await start();
    const run = (name: string) => server.executor.execute({ name, input: {}, agent: 'agent' });
    await Promise.all([run('exit0'), run('exit0'), run('exit3'), run('no-such-tool')]);
    const response = await scrape(base);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/openmetrics-text/);
    const text = await response.text();
    expect(text.endsWith('# EOF\n')).toBe(true);
    const s = samples(text);
    // A name no host advertised is counted under "(other)", never under its own (unbounded) name.
    expect(s.get('toolwire_calls_total{tool="(other)",host="",exit_code="0"}')).toBe(2);
    expect(s.get('toolwire_calls_total{tool="(other)",host="",exit_code="3"}')).toBe(1);
    expect(s.get('toolwire_calls_total{tool="(other)",host="",exit_code="127"}')).toBe(1);
    expect(s.get('toolwire_call_duration_seconds_count{tool="(other)",host=""}')).toBe(4);
    expect(s.get('toolwire_call_output_bytes_total')).toBe(9 + 'toolwire: no such tool "no-such-tool"\n'.length);
    for (const family of [
      'toolwire_calls_in_flight',
      'toolwire_hosts_connected',
      'toolwire_tools_advertised',
      'toolwire_mcp_sessions',
      'toolwire_advertise_rejected_total',
      'toolwire_auth_failures_total',
      'toolwire_heartbeat_terminations_total',
      'toolwire_host_frame_bytes_total{direction="in"}',
      'toolwire_frames_refused_total{kind="wrong_shape"}',
    ]) {
      expect(s.has(family), family).toBe(true);
    }
    expect(s.get('toolwire_calls_in_flight')).toBe(0);
  });

  it('counts calls that never ran: declined by the grant gate and refused by tool control, by outcome; input refused 65 by exit code', async () => {
    const { server, base } = await start({
      toolControl: (request) => (request.name === 'exit1' ? { action: 'refuse', reason: 'not today' } : { action: 'pass' }),
    });
    const declined = await server.executor.execute({ name: 'exit0', input: {}, agent: 'agent', grant: ['exit2'] });
    expect(declined.outcome).toBe('declined');
    expect((await server.executor.execute({ name: 'exit1', input: {}, agent: 'agent' })).outcome).toBe('refused');
    const invalid = await server.executor.execute({ name: 'exit0', input: {}, agent: 'agent', inputError: 'input.x: must be a string' });
    expect(invalid.outcome === 'completed' && invalid.capture.exitCode).toBe(65);
    const s = samples(await (await scrape(base)).text());
    // Neither name was advertised by a host: counted under "(other)", as completed calls are.
    expect(s.get('toolwire_calls_refused_total{tool="(other)",outcome="declined"}')).toBe(1);
    expect(s.get('toolwire_calls_refused_total{tool="(other)",outcome="refused"}')).toBe(1);
    expect(s.get('toolwire_calls_total{tool="(other)",host="",exit_code="65"}')).toBe(1);
    expect(s.get('toolwire_call_duration_seconds_count{tool="(other)",host=""}')).toBe(1); // only the call that ran
  });

  it('keeps a duration exemplar (trace_id, call_id) only for a call with trace context', async () => {
    const { server, base } = await start();
    await server.executor.execute({ id: 'plain-call', name: 'exit0', input: {}, agent: 'agent' });
    let text = await (await scrape(base)).text();
    expect(text).not.toContain(' # {');
    await server.executor.execute({ id: 'traced-call', name: 'exit0', input: {}, agent: 'agent', traceparent: TRACEPARENT });
    text = await (await scrape(base)).text();
    const exemplars = text.split('\n').filter((line) => line.includes(' # {'));
    expect(exemplars.length).toBeGreaterThan(0);
    for (const line of exemplars) {
      expect(line).toMatch(
        new RegExp(`^toolwire_call_duration_seconds_bucket\\{[^}]*\\} \\d+ # \\{trace_id="${TRACE_ID}",call_id="traced-call"\\} [0-9.e-]+ [0-9.]+$`),
      );
    }
    const s = samples(text);
    expect(s.get('toolwire_call_duration_seconds_count{tool="(other)",host=""}')).toBe(2);
    expect(s.get('toolwire_call_duration_seconds_bucket{le="+Inf",tool="(other)",host=""}')).toBe(2);
  });

  it('refuses a scrape without a caller token (401) and counts it as an auth failure', async () => {
    const { base } = await start();
    expect((await scrape(base, null)).status).toBe(401);
    expect((await scrape(base, 'wrong-token-xxxxxxxxxxxxxxxxxxxxxxxx')).status).toBe(401);
    const s = samples(await (await scrape(base)).text());
    expect(s.get('toolwire_auth_failures_total')).toBe(2);
  });

  it('is 404 and keeps nothing with metrics: false', async () => {
    const { server, base } = await start({ metrics: false });
    expect((await scrape(base)).status).toBe(404);
    expect(await server.scrapeMetrics()).toBeUndefined();
  });
});

describe('trace context', () => {
  it('the executor refuses a malformed traceparent or tracestate at once (TypeError)', async () => {
    const { server } = await start();
    expect(() => server.executor.execute({ name: 'exit0', input: {}, agent: 'agent', traceparent: 'not-a-traceparent' })).toThrow(TypeError);
    expect(() => server.executor.execute({ name: 'exit0', input: {}, agent: 'agent', traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` })).toThrow(TypeError);
    expect(() => server.executor.execute({ name: 'exit0', input: {}, agent: 'agent', traceparent: TRACEPARENT, tracestate: 'a=b\nc' })).toThrow(TypeError);
  });

  it('a library call routes its traceparent and records it with the call id in output.json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolwire-trace-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const { server, routed } = await start({ recordDir: dir });
    const result = await server.executor.execute({ id: 'call-1', name: 'exit0', input: {}, agent: 'agent', traceparent: TRACEPARENT, tracestate: 'k=v' });
    expect(result.outcome).toBe('completed');
    expect(routed).toEqual([{ id: 'call-1', traceparent: TRACEPARENT }]);
    const output = JSON.parse(await readFile(join(dir, 'agent', 'call-1', 'output.json'), 'utf8')) as Record<string, unknown>;
    expect(output).toMatchObject({ id: 'call-1', traceparent: TRACEPARENT, tracestate: 'k=v', exitCode: 0 });
    expect(output.wireId).toBeUndefined(); // a local tool: no host connection, no wire id
  });

  it('the MCP door takes the HTTP traceparent header when _meta has none, and ignores an invalid one', async () => {
    const { mcpUrl, routed } = await start();
    const connect = async (headers: Record<string, string>): Promise<Client> => {
      const client = new Client({ name: 'trace-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${CALLER}`, ...headers } } }));
      cleanups.push(() => client.close());
      return client;
    };
    const withHeader = await connect({ traceparent: TRACEPARENT });
    await withHeader.callTool({ name: 'exit0', arguments: {} });
    const invalid = await connect({ traceparent: '00-zz-yy-01' });
    await invalid.callTool({ name: 'exit0', arguments: {} });
    expect(routed.map((r) => r.traceparent)).toEqual([TRACEPARENT, undefined]);
  });
});
