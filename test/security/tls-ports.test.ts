/**
 * s16-tls — a tool host that dials `wss://` to a plain (`ws://`) server port: Node reports the TLS
 * failure as `EPROTO` ("wrong version number"), not as an `ERR_SSL_*` code, so the host took it
 * for a network failure and redialed forever with an OpenSSL dump in its log. It must stop at
 * once with a TLS refusal that says the server does not speak TLS.
 */
import { ServerRefusedError, ToolHost } from '@toolwire/client';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_TOKEN, cleanup, defer, startServer } from '../helpers.js';

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
