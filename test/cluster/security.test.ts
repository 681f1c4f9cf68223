/**
 * Issue 17 item 7 with a real nats-server configured for it: a NATS token, TLS (a self-signed
 * certificate made here with openssl, server-verified and mutual), and NATS accounts as the
 * boundary: a NATS client without the cluster's credentials cannot publish or subscribe on its
 * subjects, so it cannot call a tool; a `.creds` file of NATS decentralized auth (`creds.ts`). (User
 * and password: failover.test.ts.)
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { ToolwireServer } from '@toolwire/server';
import { closeAll, startHost, type TestHost } from '@toolwire/testing';
import { HOST2_TOKEN, HOST_TOKEN, cleanup, defer, repoRoot, startServer, tempDir, waitFor } from '../helpers.js';
import { decentralizedAuth } from './creds.js';
import { NATS_SERVER, startNats } from './nats.js';

afterEach(async () => {
  await closeAll(); // hosts before their servers and NATS (in cleanup)
  await cleanup();
});

/** The integration fixture host process `alpha` (test/fixtures/host-tools.ts) on the in-process node `node`. */
const fixtureHostOn = (node: { url: string }, token = HOST_TOKEN, name = 'alpha'): Promise<TestHost> =>
  startHost({ url: node.url, token }, join(repoRoot, 'test', 'fixtures', 'host-tools.ts'), { name, process: true, hostOptions: { cancelGraceMs: 1_000 } });

const exec = promisify(execFile);

/** The exit code of an executor result (a declined call has none). */
const exitOf = (r: Awaited<ReturnType<ToolwireServer['executor']['execute']>>): number | string => (r.outcome === 'completed' ? r.capture.exitCode : r.outcome);

/** The error a node gets from `listen()` when it cannot join (undefined when it joined). */
async function joinError(options: ConstructorParameters<typeof ToolwireServer>[0]): Promise<Error | undefined> {
  const server = new ToolwireServer(options);
  const error = await server.listen(0, '127.0.0.1').then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  await server.close();
  return error;
}

/** A self-signed certificate (its own CA) for 127.0.0.1 and localhost (the NATS client checks the name localhost for a loopback IP): `{cert, key}` PEM paths in `dir`. */
async function selfSigned(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.pem`);
  const key = join(dir, `${name}-key.pem`);
  await exec('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  return { cert, key };
}

/** Two in-process nodes `a`, `b` of cluster `c` with `cluster` options; a fixture host on `a`; a call from `b` to it. */
async function callAcross(cluster: Record<string, unknown>): Promise<void> {
  const a = await startServer({ cluster: { name: 'c', node: 'a', heartbeatMs: 250, ...cluster } as never });
  const b = await startServer({ cluster: { name: 'c', node: 'b', heartbeatMs: 250, ...cluster } as never });
  await fixtureHostOn(a);
  await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__echo'), 'node b to list alpha__echo', 15_000);
  expect(exitOf(await b.server.executor.execute({ name: 'alpha__echo', input: {}, agent: 'agent' }))).toBe(ExitCode.OK);
}

describe.skipIf(NATS_SERVER === undefined)('cluster NATS security: token, TLS, accounts', () => {
  it('two clusters on one NATS (subjects toolwire.<name>.…): each node lists only its own cluster’s hosts', async () => {
    const nats = await startNats();
    const xa = await startServer({ cluster: { nats: [nats.url], name: 'x', node: 'a', heartbeatMs: 250 } });
    const xb = await startServer({ cluster: { nats: [nats.url], name: 'x', node: 'b', heartbeatMs: 250 } });
    const ya = await startServer({ cluster: { nats: [nats.url], name: 'y', node: 'a', heartbeatMs: 250 } });
    const yb = await startServer({ cluster: { nats: [nats.url], name: 'y', node: 'b', heartbeatMs: 250 } });
    const alpha = await fixtureHostOn(xa);
    await fixtureHostOn(ya, HOST2_TOKEN, 'beta');
    await waitFor(() => xb.server.router.tools().some((t) => t.name === 'alpha__echo'), 'node b of x to list alpha__echo', 15_000);
    await waitFor(() => yb.server.router.tools().some((t) => t.name === 'beta__echo'), 'node b of y to list beta__echo', 15_000);
    // An event of cluster x published after y's announcement reached y's node b: by then x's node b would have had y's too.
    await alpha.kill('SIGKILL');
    await waitFor(() => xb.server.router.hosts().length === 0, 'alpha to leave node b of x', 15_000);
    expect(xb.server.router.tools()).toEqual([]);
    expect(xa.server.router.hosts().map((h) => h.name)).not.toContain('beta');
    expect(yb.server.router.hosts().map((h) => h.name)).toEqual(['beta']);
  }, 60_000);

  it('nodes join with a NATS token and call across; a node with a wrong token cannot join', async () => {
    const nats = await startNats(['--auth', 'nats-token-0123456789abcdef']);
    await callAcross({ nats: [nats.url], credentials: { token: 'nats-token-0123456789abcdef' } });
    const error = await joinError({ cluster: { nats: [nats.url], name: 'c', node: 'x', credentials: { token: 'wrong-token-0123456789abcdef' } } });
    expect(error?.name).toBe('ClusterError');
    expect(error?.message).not.toContain('wrong-token');
  }, 60_000);

  it('a .creds file (NATS decentralized auth: operator, account and user JWTs): nodes join with it and call across; a user of another account reaches none of the cluster’s subjects', async () => {
    const dir = await tempDir('toolwire-nats-creds-');
    const auth = await decentralizedAuth(dir);
    const nats = await startNats(['-c', auth.config]);
    await callAcross({ nats: [nats.url], credentials: { credsFile: auth.creds } });
    // JetStream works in the account: the lease bucket holds alpha's identity.
    const insider = await connect({ servers: nats.url, authenticator: credsAuthenticator(await readFile(auth.creds)), reconnect: false });
    defer(() => insider.close());
    const info = await insider.request('$JS.API.STREAM.INFO.KV_toolwire-c-hosts', '', { timeout: 5_000 });
    expect(info.json<{ state?: { messages?: number } }>().state?.messages).toBeGreaterThanOrEqual(1);
    const stranger = await connect({ servers: nats.url, authenticator: credsAuthenticator(await readFile(auth.strangerCreds)), reconnect: false });
    defer(() => stranger.close());
    const refused = await stranger.request('toolwire.c.node.a.state', '{}', { timeout: 5_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toMatch(/503|no responders/i);
    const anonymous = await connect({ servers: nats.url, reconnect: false }).then(
      (nc) => (defer(() => nc.close()), undefined),
      (e: unknown) => e as Error,
    );
    expect(anonymous?.message).toMatch(/Authorization Violation/);
  }, 60_000);

  it('TLS to NATS with a self-signed certificate: nodes that trust it (tls.ca) and present a client certificate (tls.cert/key) join; without the CA or the client certificate they cannot', async () => {
    const dir = await tempDir('toolwire-nats-tls-');
    const server = await selfSigned(dir, 'nats');
    const client = await selfSigned(dir, 'node');
    // --tlsverify: the server also requires a client certificate signed by (here: equal to) tlscacert.
    const nats = await startNats(['--tlsverify', '--tlscert', server.cert, '--tlskey', server.key, '--tlscacert', client.cert]);
    const url = `tls://127.0.0.1:${nats.port}`;
    await callAcross({ nats: [url], tls: { ca: server.cert, cert: client.cert, key: client.key } });

    const untrusted = await joinError({ cluster: { nats: [url], name: 'c', node: 'x', tls: { cert: client.cert, key: client.key } } });
    expect(untrusted?.name).toBe('ClusterError');
    const noClientCert = await joinError({ cluster: { nats: [url], name: 'c', node: 'y', tls: { ca: server.cert } } });
    expect(noClientCert?.name).toBe('ClusterError');
  }, 90_000);

  it('with the cluster in a NATS account of its own, a client without its credentials cannot connect, and another account’s client can neither reach nor overhear the cluster’s subjects', async () => {
    const dir = await tempDir('toolwire-nats-auth-');
    const config = join(dir, 'accounts.conf');
    // What README "Running more than one node" tells operators: one NATS account per toolwire cluster.
    await writeFile(
      config,
      `accounts {
  TOOLWIRE_C: { jetstream: enabled, users: [ { user: tw-c, password: "tw-c-secret-0123456789" } ] }
  OTHER: { jetstream: enabled, users: [ { user: other, password: "other-secret-0123456789" } ] }
}
`,
    );
    const nats = await startNats(['-c', config]);
    await callAcross({ nats: [nats.url], credentials: { user: 'tw-c', pass: 'tw-c-secret-0123456789' } });

    // No credentials: no connection at all.
    const anonymous = await connect({ servers: nats.url, reconnect: false }).then(
      (nc) => (defer(() => nc.close()), undefined),
      (e: unknown) => e as Error,
    );
    expect(anonymous?.message).toMatch(/Authorization Violation/);

    const open = async (user: string, pass: string): Promise<NatsConnection> => {
      const nc = await connect({ servers: nats.url, user, pass, reconnect: false });
      defer(() => nc.close());
      return nc;
    };
    const insider = await open('tw-c', 'tw-c-secret-0123456789');
    const outsider = await open('other', 'other-secret-0123456789');
    // The cluster's subjects answer inside its account: node a's state.
    const state = await insider.request('toolwire.c.node.a.state', '{}', { timeout: 5_000 });
    expect(state.data.byteLength).toBeGreaterThan(0);
    // From another account the same requests (state, a call) find no responder: no node ever sees them.
    for (const what of ['state', 'call']) {
      const refused = await outsider.request(`toolwire.c.node.a.${what}`, '{}', { timeout: 5_000 }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(refused?.message, what).toMatch(/503|no responders/i);
    }
    // And it overhears nothing: while the insider receives heartbeats, the outsider's subscription gets none.
    let overheard = 0;
    outsider.subscribe('toolwire.c.>', { callback: () => void overheard++ });
    await outsider.flush();
    let heard = 0;
    insider.subscribe('toolwire.c.heartbeat', { callback: () => void heard++ });
    await waitFor(() => heard >= 4, 'the insider to receive four heartbeats', 15_000);
    await outsider.flush();
    expect(overheard).toBe(0);
  }, 60_000);

  it('in a shared NATS account, a user restricted to the cluster’s subjects (the README’s permissions) runs a node; a user restricted to other subjects is refused on them', async () => {
    const dir = await tempDir('toolwire-nats-perm-');
    const config = join(dir, 'permissions.conf');
    await writeFile(
      config,
      `authorization {
  users = [
    { user: tw-c, password: "tw-c-secret-0123456789", permissions: {
        publish: ["toolwire.c.>", "$JS.API.>", "$KV.toolwire-c-hosts.>"], subscribe: ["toolwire.c.>", "_INBOX.>"], allow_responses: true } }
    { user: other, password: "other-secret-0123456789", permissions: { publish: ["other.>"], subscribe: ["other.>", "_INBOX.>"] } }
  ]
}
`,
    );
    const nats = await startNats(['-c', config]);
    await callAcross({ nats: [nats.url], credentials: { user: 'tw-c', pass: 'tw-c-secret-0123456789' } });
    // The leases work under these permissions: the lease bucket holds alpha's identity.
    const insider = await connect({ servers: nats.url, user: 'tw-c', pass: 'tw-c-secret-0123456789', reconnect: false });
    defer(() => insider.close());
    const info = await insider.request('$JS.API.STREAM.INFO.KV_toolwire-c-hosts', '', { timeout: 5_000 });
    expect(info.json<{ state?: { messages?: number } }>().state?.messages).toBeGreaterThanOrEqual(1);

    const outsider = await connect({ servers: nats.url, user: 'other', pass: 'other-secret-0123456789', reconnect: false });
    defer(() => outsider.close());
    const refused = await outsider.request('toolwire.c.node.a.call', '{}', { timeout: 5_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).toMatch(/Permissions Violation for Publish to "toolwire\.c\.node\.a\.call"/);
    const denied = new Promise<Error | null>((resolve) => outsider.subscribe('toolwire.c.>', { callback: (e) => resolve(e) }));
    expect((await denied)?.message).toMatch(/Permissions Violation for Subscription to "toolwire\.c\.>"/);
  }, 60_000);
});
