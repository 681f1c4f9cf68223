/**
 * Issue 5 §2 — TLS: `toolwire serve --tls-cert/--tls-key` serves wss:// and https:// for the MCP
 * door; `toolwire host --ca` trusts a private CA. The certificates are made at test time with the
 * openssl CLI: a private CA and a server certificate for IP 127.0.0.1 signed by it.
 */
import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { get } from 'node:https';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { ServerRefusedError, ToolHost } from '@toolwire/client';
import { ToolwireServer } from '@toolwire/server';
import { serveCommand } from '@toolwire/cli';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, finish, repoRoot, spawnTs, tempDir, waitFor } from '../helpers.js';

const run = promisify(execFile);
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

afterEach(cleanup);

interface Pki {
  dir: string;
  ca: string;
  cert: string;
  key: string;
  /** A second, unrelated CA (a host trusting only it must refuse the server). */
  otherCa: string;
}

/** A private CA and a server certificate for 127.0.0.1 signed by it (EC P-256, valid one day). */
async function makePki(dir: string): Promise<Pki> {
  const p = (name: string): string => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.pem'), '-days', '1', '-subj', '/CN=toolwire test CA']);
  await run('openssl', ['req', '-x509', ...ec, '-keyout', p('other.key'), '-out', p('other.pem'), '-days', '1', '-subj', '/CN=unrelated CA']);
  await run('openssl', ['req', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=127.0.0.1']);
  await writeFile(p('ext.cnf'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    p('server.csr'),
    '-CA',
    p('ca.pem'),
    '-CAkey',
    p('ca.key'),
    '-CAcreateserial',
    '-out',
    p('server.pem'),
    '-days',
    '1',
    '-extfile',
    p('ext.cnf'),
  ]);
  return { dir, ca: p('ca.pem'), cert: p('server.pem'), key: p('server.key'), otherCa: p('other.pem') };
}

/** GET `url` over https trusting `ca`; resolves with status and body. */
function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }).on('error', reject);
  });
}

/** Resolves with the first match of `pattern` in the child's stdout (bounded). */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout: ${out}; stderr: ${err}`)), timeoutMs);
    child.stderr!.on('data', (d: string) => (err += d));
    child.stdout!.on('data', (d: string) => {
      out += d;
      const match = pattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before ${pattern}; stdout: ${out}; stderr: ${err}`));
    });
  });
}

const noop = (): void => undefined;
const silent = { debug: noop, info: noop, warn: noop, error: noop } as unknown as NonNullable<ConstructorParameters<typeof ToolHost>[0]['logger']>;
const sink = (): Writable & { text: string } => {
  const w = new Writable({ write: (chunk, _enc, cb) => ((w.text += String(chunk)), cb()) }) as Writable & { text: string };
  w.text = '';
  return w;
};

describe.skipIf(!hasOpenssl)('TLS (certificates made with the openssl CLI)', () => {
  it('serve --tls-cert/--tls-key serves wss:// and https://; host --ca connects; call over https works', async () => {
    const dir = await tempDir();
    const files = await makePki(dir);
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ hosts: [{ name: 'alpha', token: HOST_TOKEN }], callers: [{ name: 'agent', token: CALLER_TOKEN }] }));
    const home = { TOOLWIRE_HOME: dir };
    const serve = spawnTs(
      [cliPath, 'serve', '--config', config, '--listen', '127.0.0.1:0', '--tls-cert', files.cert, '--tls-key', files.key, '--log-level', 'warn'],
      home,
    );
    const [, wss] = await waitForOutput(serve, /tool hosts connect to\s+(wss:\/\/127\.0\.0\.1:\d+)/);
    const base = wss!.replace('wss://', 'https://');
    const ca = await readFile(files.ca);

    spawnTs(
      [cliPath, 'host', '--server', wss!, '--token', HOST_TOKEN, '--ca', files.ca, '--manifest', join(repoRoot, 'examples', 'tools.json'), '--root', repoRoot],
      home,
    );
    await waitFor(async () => JSON.parse((await httpsGet(`${base}/healthz`, ca)).body).tools > 0, 'the host to advertise over wss', 15_000);

    const call = await finish(
      spawnTs([cliPath, 'call', 'alpha__read_file', '{"path":"README.md"}', '--server', `${base}/mcp`, '--token', CALLER_TOKEN], {
        ...home,
        NODE_EXTRA_CA_CERTS: files.ca,
      }),
    );
    expect(call.stderr).toBe('');
    expect(call.code).toBe(0);
    expect(call.stdout).toBe(await readFile(join(repoRoot, 'README.md'), 'utf8'));

    // Without trusting the CA, the caller cannot reach the door (certificate refused → 69).
    const untrusted = await finish(spawnTs([cliPath, 'tools', '--server', `${base}/mcp`, '--token', CALLER_TOKEN], home));
    expect(untrusted.code).toBe(69);
  });

  it('a host refuses a server whose certificate its CA did not sign; with --ca it connects', async () => {
    const dir = await tempDir();
    const files = await makePki(dir);
    const server = new ToolwireServer({
      hosts: [{ name: 'alpha', token: HOST_TOKEN }],
      callers: [{ name: 'agent', token: CALLER_TOKEN }],
      tls: { cert: await readFile(files.cert), key: await readFile(files.key) },
    });
    const info = await server.listen(0, '127.0.0.1');
    defer(() => server.close());
    expect(info.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
    expect(info.mcpUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);

    for (const ca of [undefined, await readFile(files.otherCa)]) {
      const host = new ToolHost({ server: info.url, token: HOST_TOKEN, reconnect: false, logger: silent, ...(ca && { ca }) });
      defer(() => host.close());
      await expect(host.start()).rejects.toThrow(/certificate/i);
    }
    // With reconnect on, a certificate failure is not retried either: the host stops and says why.
    const refused = new ToolHost({ server: info.url, token: HOST_TOKEN, logger: silent });
    defer(() => refused.close());
    refused.on('error', () => {});
    const stopped = new Promise<Error>((resolve) => refused.once('stopped', resolve));
    await expect(refused.start()).rejects.toThrow(ServerRefusedError);
    const error = (await stopped) as ServerRefusedError;
    expect(error.kind).toBe('tls');
    expect(error.message).toMatch(
      /^TLS failure with wss:\/\/127\.0\.0\.1:\d+: its certificate (is self-signed|chain ends in a CA that is not trusted|is not signed by a trusted CA)/,
    );
    expect(server.router.hosts()).toEqual([]);

    // Plain ws:// to the TLS port gets nowhere and harms nothing.
    const plain = new WebSocket(info.url.replace('wss://', 'ws://'), { headers: { authorization: `Bearer ${HOST_TOKEN}` } });
    plain.on('error', () => {});
    await new Promise((resolve) => plain.once('close', resolve));

    const host = new ToolHost({ server: info.url, token: HOST_TOKEN, reconnect: false, logger: silent, ca: await readFile(files.ca) });
    defer(() => host.close());
    host.tool('echo', { inputSchema: { type: 'object' } }, (input) => JSON.stringify(input));
    const advertised = await host.start();
    expect(advertised.accepted).toEqual([{ name: 'echo', as: 'alpha__echo' }]);
    const result = await server.executor.execute({ name: 'alpha__echo', input: { over: 'tls' }, agent: 'agent' });
    expect(result.outcome === 'completed' && Buffer.from(result.capture.stdout).toString()).toBe('{"over":"tls"}');
  });

  it('serve exits 64 for --tls-cert without --tls-key, an unreadable file, or a key that does not match', async () => {
    const dir = await tempDir();
    const files = await makePki(dir);
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ hosts: [], callers: [] }));
    const cases = [
      ['--tls-cert', files.cert],
      ['--tls-cert', files.cert, '--tls-key', join(dir, 'missing.key')],
      ['--tls-cert', files.cert, '--tls-key', join(dir, 'other.key')],
    ];
    for (const flags of cases) {
      const stderr = sink();
      const code = await serveCommand(['--config', config, '--listen', '127.0.0.1:0', ...flags], { stdout: sink(), stderr, env: { TOOLWIRE_HOME: dir } });
      expect(code, flags.join(' ')).toBe(64);
      expect(stderr.text).toMatch(/tls/i);
    }
  });
});
