/**
 * s16-tls — the wrong scheme for the port, both ways.
 * - A tool host that dials `wss://` to a plain (`ws://`) server port: Node reports the TLS failure
 *   as `EPROTO` ("wrong version number"), not as an `ERR_SSL_*` code, so the host took it for a
 *   network failure and redialed forever with an OpenSSL dump in its log. It must stop at once
 *   with a TLS refusal that says the server does not speak TLS.
 * - Plain HTTP (`ws://`, `http://`) to a TLS port: the server closed the socket without a word
 *   ("socket hang up", redialed forever). It answers HTTP 400 in plain text saying the port speaks
 *   TLS, so the host stops (69) and `tools` says why.
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ServerRefusedError, ToolHost } from '@toolwire/client';
import { afterEach, describe, expect, it } from 'vitest';
import { CALLER_TOKEN, HOST_TOKEN, cleanup, cliPath, defer, finish, spawnTs, startServer, tempDir } from '../helpers.js';

const run = promisify(execFile);
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

afterEach(cleanup);

const noop = (): void => undefined;

describe('a wss:// host dialing a plain ws:// server', () => {
  it('stops at the first dial with a TLS refusal naming a plain server, and never redials', async () => {
    const { server, url } = await startServer();
    expect(url).toMatch(/^ws:\/\//);
    const wss = url.replace(/^ws:/, 'wss:');
    const warnings: unknown[] = [];
    const logger = { debug: noop, info: noop, warn: (...args: unknown[]) => warnings.push(args), error: noop } as unknown as NonNullable<
      ConstructorParameters<typeof ToolHost>[0]['logger']
    >;
    const host = new ToolHost({ server: wss, token: HOST_TOKEN, logger });
    defer(() => host.close());
    host.on('error', noop);
    const stopped = new Promise<Error>((resolve) => host.once('stopped', resolve));
    await expect(host.start()).rejects.toThrow(ServerRefusedError);
    const error = (await stopped) as ServerRefusedError;
    expect(error.kind).toBe('tls');
    expect(error.message).toMatch(
      /^TLS failure with wss:\/\/127\.0\.0\.1:\d+: the server does not speak TLS — is it a ws:\/\/ server\? \(EPROTO: wrong version number\)$/,
    );
    expect(warnings).toEqual([]); // no "will retry" line: the first dial was the last
    expect(server.router.hosts()).toEqual([]);
  });
});

describe.skipIf(!hasOpenssl)('plain HTTP to a TLS port', () => {
  it('is answered 400 in plain text naming wss:// and https://; a ws:// host stops at once, tools says why', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const cert = join(dir, 'server.pem');
    const key = join(dir, 'server.key');
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    await run('openssl', ['req', '-x509', ...ec, '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
    const { server, url, mcpUrl } = await startServer({ tls: { cert: await readFile(cert), key: await readFile(key) } });
    const port = Number(new URL(url).port);

    // A raw plain request gets the answer, and the socket is closed after it.
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (raw += d));
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(raw).toMatch(/\r\n\r\nthis port speaks TLS: use wss:\/\/ or https:\/\/\n$/);

    const warnings: unknown[] = [];
    const logger = { debug: noop, info: noop, warn: (...args: unknown[]) => warnings.push(args), error: noop } as unknown as NonNullable<
      ConstructorParameters<typeof ToolHost>[0]['logger']
    >;
    const host = new ToolHost({ server: url.replace(/^wss:/, 'ws:'), token: HOST_TOKEN, logger });
    defer(() => host.close());
    host.on('error', noop);
    const stopped = new Promise<Error>((resolve) => host.once('stopped', resolve));
    await expect(host.start()).rejects.toThrow(ServerRefusedError);
    const error = (await stopped) as ServerRefusedError;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/HTTP 400: this port speaks TLS: use wss:\/\/ or https:\/\//);
    expect(warnings).toEqual([]);
    expect(server.router.hosts()).toEqual([]);

    const tools = await finish(spawnTs([cliPath, 'tools', '--server', mcpUrl.replace(/^https:/, 'http:')], { TOOLWIRE_HOME: dir, TOOLWIRE_TOKEN: CALLER_TOKEN }));
    expect(tools.code).toBe(69);
    expect(tools.stderr).toMatch(/HTTP 400: this port speaks TLS: use wss:\/\/ or https:\/\//);
    const status = await finish(spawnTs([cliPath, 'status', '--server', url.replace(/^wss:/, 'http:')], { TOOLWIRE_HOME: dir, TOOLWIRE_TOKEN: CALLER_TOKEN }));
    expect(status.code).toBe(69);
    expect(status.stderr).toMatch(/HTTP 400: this port speaks TLS: use wss:\/\/ or https:\/\/\n$/);
  });
});
