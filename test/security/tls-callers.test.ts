/**
 * s16-tls — the caller commands (`tools`, `call`, `status`, `mcp`) against an https:// server whose
 * certificate they do not trust, or an https:// URL of a plain server: 69 as before, but the line
 * says it is TLS and what to do (`NODE_EXTRA_CA_CERTS=ca.pem` for a private CA), instead of a bare
 * OpenSSL code such as `cannot reach server …: UNABLE_TO_VERIFY_LEAF_SIGNATURE`.
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { CALLER_TOKEN, cleanup, cliPath, finish, spawnTs, startServer, tempDir } from '../helpers.js';

const run = promisify(execFile);
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

afterEach(cleanup);

describe.skipIf(!hasOpenssl)('caller commands and TLS', () => {
  it('tools, status and mcp name an untrusted certificate as TLS and point to NODE_EXTRA_CA_CERTS; with it, tools works', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const cert = join(dir, 'server.pem');
    const key = join(dir, 'server.key');
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    await run('openssl', ['req', '-x509', ...ec, '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
    const { mcpUrl } = await startServer({ tls: { cert: await readFile(cert), key: await readFile(key) } });
    const base = mcpUrl.replace(/\/mcp$/, '');
    const env = { TOOLWIRE_HOME: dir, TOOLWIRE_TOKEN: CALLER_TOKEN };
    const untrusted = /TLS: its certificate is self-signed and not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\); for a private CA, run with NODE_EXTRA_CA_CERTS=ca\.pem/;

    const tools = await finish(spawnTs([cliPath, 'tools', '--server', mcpUrl], env));
    expect(tools.code).toBe(69);
    expect(tools.stderr).toMatch(new RegExp(`^toolwire: cannot reach server ${mcpUrl.replace(/[./]/g, '\\$&')}: ${untrusted.source}\n$`));
    const status = await finish(spawnTs([cliPath, 'status', '--server', base], env));
    expect(status.code).toBe(69);
    expect(status.stderr).toMatch(untrusted);
    const mcp = await finish(spawnTs([cliPath, 'mcp', '--server', base], env));
    expect(mcp.code).toBe(69);
    expect(mcp.stderr).toMatch(untrusted);

    const trusted = await finish(spawnTs([cliPath, 'tools', '--server', mcpUrl], { ...env, NODE_EXTRA_CA_CERTS: cert }));
    expect(trusted.stderr).toMatch(/^no tools \(no tool host is connected/); // the server has no host: reached, over TLS
    expect(trusted.code).toBe(0);
  });

  it('tools says a plain server does not speak TLS when given its https:// URL', async () => {
    const { mcpUrl } = await startServer();
    const https = mcpUrl.replace(/^http:/, 'https:');
    const dir = await tempDir();
    const tools = await finish(spawnTs([cliPath, 'tools', '--server', https], { TOOLWIRE_HOME: dir, TOOLWIRE_TOKEN: CALLER_TOKEN }));
    expect(tools.code).toBe(69);
    expect(tools.stderr).toMatch(/: TLS: the server does not speak TLS — is it an http:\/\/ server\? \(EPROTO: wrong version number\)\n$/);
  });
});
