/**
 * The host's credentials stay out of the MCP servers `toolwire host --mcp-config` starts, as they stay
 * out of its manifest tools (README "Tool environment", "Bring your MCP servers": "the host's
 * environment minus its credentials plus env"): no TOOLWIRE_TOKEN, no TOOLWIRE_TOKEN_FILE, and no
 * variable whose value is the host's token, whichever layer set it. Read from the real server
 * process's /proc/<pid>/environ (Linux), the pid from the fake server's own start line.
 */
import { readFileSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_TOKEN, cleanup, cliPath, spawnTs, startServer, tempDir, waitFor } from '../helpers.js';
import { FAKE } from '../mcp-sources/harness.js';

afterEach(cleanup);

/** The environment of a live process, as name → value. */
function environOf(pid: number): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const at = entry.indexOf('=');
    if (at > 0) vars[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return vars;
}

describe.runIf(process.platform === 'linux')('an MCP server started by toolwire host never sees the host credentials', () => {
  it('--token with the token also in MY_TOKEN: the server gets no variable holding it, nor TOOLWIRE_TOKEN(_FILE); ${MY_TOKEN} in its env expands as unset', async () => {
    const dir = await tempDir('toolwire-mcp-secrets-');
    const fakeLog = join(dir, 'fake.log');
    const config = join(dir, 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          fake: { command: process.execPath, args: [FAKE, 'normal'], env: { MCP_FAKE_LOG: fakeLog, FROM_CONFIG: '${MY_TOKEN:-unset}', OWN_VAR: 'own' } },
        },
      }),
    );
    const tokenFile = join(dir, 'host-token');
    await writeFile(tokenFile, `${HOST_TOKEN}\n`, { mode: 0o600 });
    await chmod(tokenFile, 0o600);
    const started = await startServer();
    const host = spawnTs([cliPath, 'host', '--server', started.url, '--token', HOST_TOKEN, '--mcp-config', config], {
      KEPT_VAR: 'kept',
      MY_TOKEN: HOST_TOKEN,
      MY_TOKEN_LINE: `${HOST_TOKEN}\n`,
      TOOLWIRE_TOKEN_FILE: tokenFile,
    });
    let log = '';
    host.stderr!.on('data', (d: string) => (log += d));
    await waitFor(() => started.server.router.tools().some((t) => t.name === 'alpha__fake_echo') || host.exitCode !== null, 'the MCP tools', 15_000);
    expect(host.exitCode, log).toBeNull();
    const pid = Number(/^start (\d+)$/m.exec(await readFile(fakeLog, 'utf8'))![1]);

    const vars = environOf(pid);
    expect(vars.KEPT_VAR).toBe('kept'); // the rest of the host's environment is inherited
    expect(vars.OWN_VAR).toBe('own');
    expect(vars).not.toHaveProperty('TOOLWIRE_TOKEN');
    expect(vars).not.toHaveProperty('TOOLWIRE_TOKEN_FILE');
    expect(vars).not.toHaveProperty('MY_TOKEN');
    expect(vars).not.toHaveProperty('MY_TOKEN_LINE');
    expect(vars.FROM_CONFIG).toBe('unset'); // ${MY_TOKEN} expands as unset, as in a manifest
    expect(Object.values(vars).some((v) => v.includes(HOST_TOKEN))).toBe(false);
  });
});
