/**
 * A real `nats-server` (Debian's package) for cluster tests: a random client port on 127.0.0.1,
 * JetStream in a temporary folder, stopped and removed by the harness's `cleanup()`; and the
 * host identities and fixture host of the cluster tests (@toolwire/testing).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import type { HostCredential } from '@toolwire/server';
import { type TestHost, type TestServer, generateToken, startHost } from '@toolwire/testing';
import { defer, repoRoot, tempDir, waitForText } from '../helpers.js';

export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => existsSync(p));

export interface Nats {
  url: string;
  port: number;
  child: ChildProcess;
  /** SIGKILL it. */
  kill(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound and released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Three nats-servers routed into one NATS cluster (JetStream on each). */
export async function startNatsCluster(): Promise<Nats[]> {
  return Promise.all((await natsClusterArgs()).map((args) => startNats(args)));
}

/** The `startNats` arguments of three nats-servers (named n0, n1, n2) routed into one NATS cluster, to start one by one. */
export async function natsClusterArgs(): Promise<string[][]> {
  const routes = await Promise.all([freePort(), freePort(), freePort()]);
  const all = routes.map((p) => `nats://127.0.0.1:${p}`).join(',');
  return routes.map((route, i) => ['--cluster_name', 'tw', '-n', `n${i}`, '--cluster', `nats://127.0.0.1:${route}`, '--routes', all]);
}

/** Start one nats-server with JetStream; `args` are extra flags (e.g. `--user`, `--pass`). */
export async function startNats(args: string[] = [], port?: number): Promise<Nats> {
  if (NATS_SERVER === undefined) throw new Error('nats-server is not installed (apt-get install -y nats-server)');
  const store = await tempDir('toolwire-nats-');
  const child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port ?? -1), '-js', '-sd', store, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.setEncoding('utf8');
  child.stdout.setEncoding('utf8');
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  };
  defer(async () => {
    await kill();
    await rm(store, { recursive: true, force: true });
  });
  const [, found] = await waitForText(child.stderr, /Listening for client connections on [^\s]+:(\d+)[\s\S]*Server is ready/, 10_000);
  const listening = Number(found);
  return { url: `nats://127.0.0.1:${listening}`, port: listening, child, kill };
}

/** Host identities `alpha` and `beta` with generated tokens, for every node of one cluster (`startServer({hosts})`). */
export const clusterHosts = (): HostCredential[] => [
  { name: 'alpha', token: generateToken() },
  { name: 'beta', token: generateToken() },
];

/** The integration fixture host process `alpha` (test/fixtures/host-tools.ts) on `node`. */
export const fixtureHost = (node: TestServer): Promise<TestHost> =>
  startHost(node, join(repoRoot, 'test', 'fixtures', 'host-tools.ts'), { name: 'alpha', process: true, hostOptions: { cancelGraceMs: 1_000 } });
