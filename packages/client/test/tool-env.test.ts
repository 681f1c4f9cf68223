import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveHostOptions } from '../src/host/options.js';
import { runCommandTool } from '../src/subprocess/run-command.js';
import { type EnvPolicy, mcpServerEnv, toolEnv } from '../src/subprocess/tool-env.js';
import type { CallFacts, CommandSpec } from '../src/types.js';

const TOKEN = 'tok-secret-0123456789abcdef';
const schema = { type: 'object' };
const ctx = (): CallFacts => ({ id: 'c1', agent: 'a', workspace: '/ws', deadlineMs: 5000, signal: new AbortController().signal });
const printEnv: CommandSpec = { inputSchema: schema, command: ['env'] };

/** The variables a tool printed with `env` (one `NAME=value` per line). */
function parseEnv(bytes: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of Buffer.from(bytes).toString('utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

const saved = { ...process.env };
beforeEach(() => {
  process.env.TOOLWIRE_TOKEN = TOKEN;
  process.env.TOOLWIRE_TOKEN_FILE = '/secret/host-token';
  process.env.MY_TOKEN = TOKEN;
  process.env.MY_TOKEN_NL = `${TOKEN}\n`;
  process.env.KEPT_VAR = 'kept';
  process.env.PASSED_VAR = 'passed';
});
afterEach(() => {
  for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
  Object.assign(process.env, saved);
});

describe('a tool environment never carries the host credentials', () => {
  it('a ToolHost built with only `token` scrubs TOOLWIRE_TOKEN, TOOLWIRE_TOKEN_FILE and any variable holding the token', () => {
    const { env } = resolveHostOptions({ server: 'ws://127.0.0.1:1', token: TOKEN });
    expect(env.inherit).toBe(true);
    const e = toolEnv({ ...printEnv, env: { FROM_MANIFEST: TOKEN, OK: 'yes' } }, ctx(), env);
    expect(e.KEPT_VAR).toBe('kept');
    expect(e.OK).toBe('yes');
    for (const name of ['TOOLWIRE_TOKEN', 'TOOLWIRE_TOKEN_FILE', 'MY_TOKEN', 'MY_TOKEN_NL', 'FROM_MANIFEST']) expect(e).not.toHaveProperty(name);
    expect(Object.values(e).some((v) => v?.includes(TOKEN))).toBe(false);
  });

  it('scrubEnv names more variables to remove; a host without a token still scrubs the two credential variables', () => {
    const { env } = resolveHostOptions({ server: 'ws://127.0.0.1:1', scrubEnv: ['KEPT_VAR'] });
    const e = toolEnv(printEnv, ctx(), env);
    expect(e).not.toHaveProperty('KEPT_VAR');
    expect(e).not.toHaveProperty('TOOLWIRE_TOKEN');
    expect(e).not.toHaveProperty('TOOLWIRE_TOKEN_FILE');
    expect(e.MY_TOKEN).toBe(TOKEN); // no token known: only names are scrubbed
    expect(() => resolveHostOptions({ server: 'ws://127.0.0.1:1', scrubEnv: 'X' as unknown as string[] })).toThrow(TypeError);
    expect(() => resolveHostOptions({ server: 'ws://127.0.0.1:1', inheritEnv: 'no' as unknown as boolean })).toThrow(TypeError);
  });

  it("a stdio MCP server's environment: the host's and the server's env, minus TOOLWIRE_TOKEN(_FILE), scrubEnv and any variable holding the token", () => {
    const { env } = resolveHostOptions({ server: 'ws://127.0.0.1:1', token: TOKEN, scrubEnv: ['PASSED_VAR'], inheritEnv: false });
    const e = mcpServerEnv({ FROM_CONFIG: TOKEN, OK: 'yes' }, env);
    expect(e.KEPT_VAR).toBe('kept'); // a server inherits the host's environment whatever inheritEnv says (README)
    expect(e.OK).toBe('yes');
    for (const name of ['TOOLWIRE_TOKEN', 'TOOLWIRE_TOKEN_FILE', 'MY_TOKEN', 'MY_TOKEN_NL', 'FROM_CONFIG', 'PASSED_VAR']) expect(e).not.toHaveProperty(name);
    expect(Object.values(e).some((v) => v?.includes(TOKEN))).toBe(false);
  });

  it('inheritEnv: false passes only the base variables, env_passthrough and the tool env (credentials never, even when named)', () => {
    const { env } = resolveHostOptions({ server: 'ws://127.0.0.1:1', token: TOKEN, inheritEnv: false });
    const e = toolEnv({ ...printEnv, envPassthrough: ['PASSED_VAR', 'TOOLWIRE_TOKEN', 'MY_TOKEN', 'UNSET_VAR'], env: { OWN: '1' } }, ctx(), env);
    expect(Object.keys(e).sort()).toEqual(
      [
        ...['PATH', 'HOME', 'LANG', 'TERM', 'USER', 'SHELL', 'TMPDIR'].filter((n) => process.env[n] !== undefined),
        'PASSED_VAR',
        'OWN',
        'TOOLWIRE_CALL_ID',
        'TOOLWIRE_AGENT',
        'TOOLWIRE_WORKSPACE',
        'TOOLWIRE_DEADLINE_MS',
      ].sort(),
    );
  });

  describe.each([
    { spawnHelper: true, how: 'spawned by the spawn helper' },
    { spawnHelper: false, how: 'spawned by this process' },
  ])('a tool $how', ({ spawnHelper }) => {
    const policy = (): EnvPolicy => resolveHostOptions({ server: 'ws://127.0.0.1:1', token: TOKEN }).env;

    it('prints an environment without the token', async () => {
      const c = await runCommandTool(printEnv, {}, ctx(), { spawnHelper, env: policy() });
      expect(c.exitCode).toBe(0);
      const seen = parseEnv(c.stdout);
      expect(seen.KEPT_VAR).toBe('kept');
      expect(seen.TOOLWIRE_CALL_ID).toBe('c1');
      expect(seen).not.toHaveProperty('TOOLWIRE_TOKEN');
      expect(seen).not.toHaveProperty('TOOLWIRE_TOKEN_FILE');
      expect(Buffer.from(c.stdout).toString('utf8')).not.toContain(TOKEN);
    });

    it('with inheritEnv false sees PATH and its passthrough variable, not the rest', async () => {
      const env = resolveHostOptions({ server: 'ws://127.0.0.1:1', token: TOKEN, inheritEnv: false }).env;
      const c = await runCommandTool({ ...printEnv, envPassthrough: ['PASSED_VAR'] }, {}, ctx(), { spawnHelper, env });
      const seen = parseEnv(c.stdout);
      expect(seen.PATH).toBe(process.env.PATH);
      expect(seen.PASSED_VAR).toBe('passed');
      expect(seen).not.toHaveProperty('KEPT_VAR');
      expect(Buffer.from(c.stdout).toString('utf8')).not.toContain(TOKEN);
    });
  });
});

describe('trace context in the tool environment (issue 16)', () => {
  const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const base = { PATH: '/bin', TRACEPARENT: '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01', TRACESTATE: 'host=own' };

  it("gives the call's traceparent and tracestate as TRACEPARENT and TRACESTATE", () => {
    const env = toolEnv(printEnv, { ...ctx(), traceparent: TP, tracestate: 'k=v' }, undefined, base);
    expect(env.TRACEPARENT).toBe(TP);
    expect(env.TRACESTATE).toBe('k=v');
    expect(env.TOOLWIRE_CALL_ID).toBe('c1');
  });

  it("never passes the host's own TRACEPARENT/TRACESTATE to a call without trace context", () => {
    const env = toolEnv(printEnv, ctx(), undefined, base);
    expect(env.TRACEPARENT).toBeUndefined();
    expect(env.TRACESTATE).toBeUndefined();
    const withoutState = toolEnv(printEnv, { ...ctx(), traceparent: TP }, undefined, base);
    expect(withoutState.TRACEPARENT).toBe(TP);
    expect(withoutState.TRACESTATE).toBeUndefined();
  });
});
