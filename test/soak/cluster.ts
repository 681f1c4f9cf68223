/**
 * `pnpm soak --cluster N` — issue 17: a bounded soak of a cluster. N real `toolwire serve` processes
 * on real nats-servers (a 3-server NATS cluster by default, `--nats 1` for one; JetStream on, the
 * lease bucket with 3 replicas on 3), real tool-host processes each connected to a random node (a
 * restarted host picks a node again, so identities move between nodes), and callers that call from
 * every node to every host over MCP (2026-07-28, stateless: any node serves any request), with
 * random deadlines and stops. Meanwhile chaos SIGKILLs nodes, hosts and NATS servers and restarts
 * them (at most one node and one NATS server down at a time).
 *
 * At the end it checks: every call settled on the caller's side (an answer, or a failed request
 * only when the caller's node was killed meanwhile, or the caller's own stop), every answer carries
 * an expected exit code (0, 65, 69, 75, 124, 127, 130), every node's `toolwire_calls_in_flight` is
 * back to 0, and no process the soak started outlived it. It prints the figures and exits 1 on any
 * violation.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { connect as natsConnect } from '@nats-io/transport-node';
import { SOURCE_NODE_ARGS } from '../source-node.js';
import { killProcesses, markedProcesses } from './procs.js';

export interface ClusterSoakOptions {
  nodes: number;
  /** nats-servers: 1, or 3 routed into one NATS cluster. */
  natsServers: number;
  seconds: number;
  hosts: number;
  callers: number;
  random: () => number;
  seed: number;
  repoRoot: string;
  runId: string;
  /** Folder for configs, NATS stores and logs (removed by the caller). */
  dir: string;
}

const EXPECTED = new Set([0, 65, 69, 75, 124, 127, 130]);
const DEADLINE_MS = 5_000;
const GRACE_MS = 1_000;
const CALLER = 'soak';

/** A free TCP port on 127.0.0.1 (bound and released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll `check` every `everyMs` until it holds or `ms` passed; resolves whether it held. */
async function until(check: () => boolean | Promise<boolean>, ms: number, everyMs = 100): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(everyMs))
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return true;
  return false;
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
function tcpUp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** A process the soak keeps running: killed by chaos, restarted by `start`. */
interface Proc {
  name: string;
  child: ChildProcess | undefined;
  /** Incremented at each kill (a call in flight when its node was killed may fail). */
  generation: number;
  down: boolean;
  /** When it last came up (ms since the epoch), after a restart. */
  upAt?: number;
}

export async function clusterSoak(o: ClusterSoakOptions): Promise<number> {
  const { random, repoRoot, runId, dir } = o;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const env = { ...process.env, TOOLWIRE_SOAK: runId };
  const token = (name: string): string => `soak-token-${name}-${runId}-0123456789`;
  const logOf = (name: string): number => openSync(join(dir, `${name}.log`), 'a');
  let running = true;
  const chaos = new Map<string, number>();
  const note = (what: string): void => void chaos.set(what, (chaos.get(what) ?? 0) + 1);

  // ---- NATS ---------------------------------------------------------------------------------------
  const natsPorts = await Promise.all(Array.from({ length: o.natsServers }, freePort));
  const routePorts = await Promise.all(Array.from({ length: o.natsServers }, freePort));
  const natsUrls = natsPorts.map((p) => `nats://127.0.0.1:${p}`);
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  const nats: Proc[] = natsPorts.map((_, i) => ({ name: `nats${i}`, child: undefined, generation: 0, down: true }));
  const startNats = (i: number): void => {
    const n = nats[i]!;
    const store = join(dir, n.name);
    mkdirSync(store, { recursive: true });
    const cluster = o.natsServers > 1 ? ['--cluster_name', 'soak', '-n', n.name, '--cluster', `nats://127.0.0.1:${routePorts[i]}`, '--routes', routes] : [];
    const log = logOf(n.name);
    const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(natsPorts[i]), '-js', '-sd', store, ...cluster], {
      env,
      stdio: ['ignore', log, log],
      detached: true,
    });
    n.child = child;
    // Up (and a candidate for the next kill) once it accepts connections.
    void until(() => tcpUp(natsPorts[i]!), 30_000).then(() => {
      if (n.child === child) n.down = false;
    });
  };
  nats.forEach((_, i) => startNats(i));
  // JetStream answers (a NATS cluster has elected its meta leader) before the nodes create the bucket.
  const probe = await (async () => {
    for (const end = Date.now() + 30_000; ; await sleep(200)) {
      try {
        return await natsConnect({ servers: natsUrls, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      } catch (error) {
        if (Date.now() > end) throw error;
      }
    }
  })();
  const jetStreamUp = (): Promise<boolean> =>
    probe
      .request('$JS.API.INFO', '', { timeout: 2_000 })
      .then((m) => m.json<{ error?: unknown }>().error === undefined)
      .catch(() => false);
  if (!(await until(jetStreamUp, 30_000, 250))) throw new Error('cluster soak: JetStream did not come up');

  // ---- toolwire serve nodes -----------------------------------------------------------------------
  const hostNames = Array.from({ length: o.hosts }, (_, i) => `h${i}`);
  const nodePorts = await Promise.all(Array.from({ length: o.nodes }, freePort));
  const nodes: Proc[] = nodePorts.map((_, i) => ({ name: `n${i}`, child: undefined, generation: 0, down: true }));
  const startNode = (i: number): void => {
    const n = nodes[i]!;
    const home = join(dir, n.name);
    mkdirSync(home, { recursive: true });
    const config = join(home, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        hosts: hostNames.map((name) => ({ name, token: token(name) })),
        callers: [{ name: CALLER, token: token(CALLER) }],
        heartbeatMs: 1_000,
        deadlineMs: DEADLINE_MS,
        cancelGraceMs: GRACE_MS,
        cluster: { nats: natsUrls, name: 'soak', node: n.name, heartbeatMs: 500, kvReplicas: Math.min(3, o.natsServers) },
      }),
    );
    const log = logOf(n.name);
    const cli = join(repoRoot, 'packages', 'cli', 'src', 'main.ts');
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, cli, 'serve', '--config', config, '--listen', `127.0.0.1:${nodePorts[i]}`, '--log-level', 'warn'], {
      cwd: repoRoot,
      env: { ...env, TOOLWIRE_HOME: home },
      stdio: ['ignore', log, log],
      detached: true,
    });
    n.child = child;
    // Callers use it (and chaos may kill it again) once it answers /healthz.
    void until(() => nodeUp(i), 60_000, 200).then(() => {
      if (n.child !== child) return;
      n.down = false;
      if (n.generation > 0) n.upAt = Date.now();
    });
  };
  const nodeHttp = (i: number): string => `http://127.0.0.1:${nodePorts[i]}`;
  const nodeUp = (i: number): Promise<boolean> =>
    fetch(`${nodeHttp(i)}/healthz`, { signal: AbortSignal.timeout(2_000) })
      .then((r) => r.ok)
      .catch(() => false);
  nodes.forEach((_, i) => startNode(i));
  if (!(await until(() => !nodes.some((n) => n.down), 60_000, 200))) throw new Error('cluster soak: the nodes did not start');

  // ---- tool hosts, each on a random node ------------------------------------------------------------
  const fixture = join(repoRoot, 'test', 'adversarial', 'fixtures', 'host.ts');
  const hosts: (Proc & { restart?: NodeJS.Timeout })[] = hostNames.map((name) => ({ name, child: undefined, generation: 0, down: true }));
  const startHost = (h: (typeof hosts)[number]): void => {
    if (!running) return;
    const node = Math.floor(random() * o.nodes);
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, fixture], {
      cwd: repoRoot,
      env: {
        ...env,
        TOOLWIRE_SERVER: `ws://127.0.0.1:${nodePorts[node]}`,
        TOOLWIRE_TOKEN: token(h.name),
        PIDDIR: dir,
        FIXTURE_GRACE_MS: '300',
        FIXTURE_DRAIN_MS: '200',
      },
      stdio: ['ignore', 'ignore', 'ignore'],
      detached: true,
    });
    h.child = child;
    h.down = false;
    h.upAt = Date.now();
    child.on('exit', () => {
      if (h.child !== child) return;
      h.child = undefined;
      h.down = true;
      if (running) h.restart = setTimeout(() => startHost(h), 100 + random() * 1_400);
    });
  };
  hosts.forEach(startHost);
  const totalTools = async (i: number): Promise<number> => ((await (await fetch(`${nodeHttp(i)}/healthz`)).json()) as { tools: number }).tools;
  await until(async () => (await totalTools(0)) >= o.hosts * 4, 60_000, 200);

  // ---- callers: every node to every host ----------------------------------------------------------
  const clients = new Map<number, Promise<Client>>();
  const clientOf = (i: number): Promise<Client> => {
    let client = clients.get(i);
    if (client === undefined) {
      const made = new Client({ name: 'soak', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      const transport = new StreamableHTTPClientTransport(new URL(`${nodeHttp(i)}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token(CALLER)}` } } });
      client = made.connect(transport).then(() => made);
      client.catch(() => clients.delete(i));
      clients.set(i, client);
    }
    return client;
  };
  const TOOLS: readonly (readonly [string, number])[] = [
    ['echo', 40],
    ['late', 20],
    ['wait', 8],
    ['tree', 4],
    ['missing', 4],
  ];
  const weight = TOOLS.reduce((n, [, w]) => n + w, 0);
  const pickKind = (): string => {
    let r = random() * weight;
    for (const [name, w] of TOOLS) if ((r -= w) < 0) return name;
    return 'echo';
  };
  let issued = 0;
  let unsettled = 0;
  const outcomes = new Map<string, number>();
  const unexpected: string[] = [];
  /** Why calls ended non-zero: `<exit code> <toolwire's reason>` (host and node ids elided) → count. */
  const reasons = new Map<string, number>();
  const count = (key: string): void => void outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  const pending = new Set<Promise<void>>();

  /**
   * Why a node may not know a host's tool (127 where 69 is the contract): the answering node
   * restarted < 30 s before (it never heard of a host that is down), or the host was down or had
   * (re)started < 5 s before the call; else nothing known.
   */
  const whyUnknown = (node: Proc, host: Proc, at: number): string => {
    if (at - (node.upAt ?? 0) < 30_000) return ' (node restarted < 30 s ago)';
    if (host.down || host.child === undefined) return ' (host down)';
    if (at - (host.upAt ?? 0) < 5_000) return ' (host started < 5 s before)';
    return ' (node up > 30 s, host up > 5 s)';
  };

  async function oneCall(): Promise<void> {
    const at = Math.floor(random() * o.nodes);
    const node = nodes[at]!;
    if (node.down) return sleep(20 + random() * 80);
    const generation = node.generation;
    let client: Client;
    try {
      client = await clientOf(at);
    } catch {
      count('node not answering (no call made)');
      return sleep(50 + random() * 100);
    }
    const kind = pickKind();
    const hostIndex = Math.floor(random() * hostNames.length);
    const host = hostNames[hostIndex]!;
    const name = kind === 'missing' ? `${host}__no_such_tool` : `${host}__${kind}`;
    const args: Record<string, unknown> = kind === 'late' ? { ms: Math.floor(random() * 300) } : { n: issued };
    const deadline = random() < 0.3 ? undefined : 100 + Math.floor(random() * 2_500);
    const stop = new AbortController();
    const stopAt = random() < 0.05 ? setTimeout(() => stop.abort(), random() * 1_000) : undefined;
    issued++;
    const startedCall = Date.now();
    try {
      const params = { name, arguments: args, ...(deadline && { _meta: { 'toolwire/deadlineMs': deadline } }) };
      const result = await client.callTool(params, { signal: stop.signal, timeout: (deadline ?? DEADLINE_MS) + GRACE_MS + 20_000 });
      const { exitCode, stderr } = (result.structuredContent ?? {}) as { exitCode?: number; stderr?: string };
      count(`exit ${exitCode ?? '(none)'}`);
      if (exitCode !== 0 && typeof stderr === 'string') {
        const why = /toolwire: ([^\n]*)/
          .exec(stderr)?.[1]
          ?.replace(/\b(h\d+|n\d+)\b/g, '…')
          .replace(/"h\d+__/g, '"…__')
          .replace(/\d+ ms/g, 'N ms');
        const key = `${exitCode} ${why}${exitCode === 127 && kind !== 'missing' ? whyUnknown(node, hosts[hostIndex]!, startedCall) : ''}`;
        if (why !== undefined) reasons.set(key, (reasons.get(key) ?? 0) + 1);
      }
      if (exitCode === undefined || !EXPECTED.has(exitCode)) unexpected.push(`${name} via n${at}: exit ${exitCode} ${JSON.stringify(result).slice(0, 200)}`);
      if ((exitCode === 69 || exitCode === 127) && kind !== 'missing') await sleep(10 + random() * 40);
    } catch (error) {
      const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (stop.signal.aborted) count('stopped by its caller');
      else if (node.generation !== generation || node.down) count('lost with the caller’s node (killed)');
      else if (/timed? ?out/i.test(why)) {
        unsettled++;
        unexpected.push(`${name} via n${at}: no answer within the bound (${why})`);
      } else {
        count('failed request');
        unexpected.push(`${name} via n${at}: ${why.slice(0, 200)}`);
      }
    } finally {
      clearTimeout(stopAt);
    }
  }
  async function caller(): Promise<void> {
    while (running) {
      const call = oneCall();
      pending.add(call);
      await call.finally(() => pending.delete(call));
    }
  }

  // ---- chaos --------------------------------------------------------------------------------------
  const kill = (p: Proc, restart: () => void, downMs: number, what: string): void => {
    if (p.down || p.child === undefined) return;
    try {
      process.kill(-p.child.pid!, 'SIGKILL');
    } catch {
      return;
    }
    note(what);
    p.down = true;
    p.generation++;
    setTimeout(restart, downMs);
  };
  const chaosStep = (): void => {
    const action = pick(['node', 'host', 'host', 'nats', 'none', 'none', 'none'] as const);
    if (action === 'node' && !nodes.some((n) => n.down)) {
      const i = Math.floor(random() * o.nodes);
      kill(nodes[i]!, () => startNode(i), 1_000 + random() * 2_000, 'node SIGKILL + restart');
    } else if (action === 'host') {
      const h = pick(hosts);
      if (h.child !== undefined && !h.down) {
        try {
          process.kill(-h.child.pid!, 'SIGKILL');
          note('host SIGKILL (restarts on a random node)');
        } catch {
          // already gone
        }
      }
    } else if (action === 'nats' && o.natsServers > 1 && !nats.some((n) => n.down)) {
      const i = Math.floor(random() * o.natsServers);
      kill(nats[i]!, () => startNats(i), 1_000 + random() * 3_000, 'NATS server SIGKILL + restart');
    }
  };

  // ---- run ----------------------------------------------------------------------------------------
  console.log(`soak --cluster: ${o.seconds}s, ${o.nodes} nodes, ${o.natsServers} nats-servers, ${o.hosts} hosts, ${o.callers} callers, seed ${o.seed}`);
  const startedAt = Date.now();
  const chaosTimer = setInterval(chaosStep, 1_000);
  const ticker = setInterval(() => console.log(`soak: ${Math.round((Date.now() - startedAt) / 1000)}s issued ${issued}, in flight ${pending.size}`), 10_000);
  const callers = Array.from({ length: o.callers }, caller);
  let interrupted = false;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, o.seconds * 1_000);
    const onSignal = (): void => {
      interrupted = true;
      clearTimeout(timer);
      resolve();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });

  // ---- wind down: no new calls or kills; every call settles; every node back to 0 in flight ---------
  running = false;
  clearInterval(chaosTimer);
  clearInterval(ticker);
  await Promise.all(callers);
  // Nodes and NATS servers killed last come back (their restart timers run on).
  await until(() => !nodes.some((n) => n.down) && !nats.some((n) => n.down), 10_000);
  let inFlight = -1;
  const inFlightAll = async (): Promise<number> => {
    let sum = 0;
    for (let i = 0; i < o.nodes; i++) {
      const text = await (await fetch(`${nodeHttp(i)}/metrics`, { headers: { authorization: `Bearer ${token(CALLER)}` } })).text();
      sum += Number(/^toolwire_calls_in_flight (\d+)/m.exec(text)?.[1] ?? NaN);
    }
    return sum;
  };
  await until(async () => (inFlight = await inFlightAll()) === 0, DEADLINE_MS + GRACE_MS + 10_000, 250);

  // ---- tear down, then look for any process that outlived it -------------------------------------
  for (const h of hosts) clearTimeout(h.restart);
  for (const client of clients.values()) await client.then((c) => c.close()).catch(() => undefined);
  await probe.close().catch(() => undefined);
  const stopAll = async (list: Proc[]): Promise<void> => {
    await Promise.all(
      list.map(async (p) => {
        const child = p.child;
        if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  };
  await stopAll(hosts);
  await stopAll(nodes);
  await stopAll(nats);
  let leaked = markedProcesses(runId);
  for (const end = Date.now() + 3_000; leaked.length > 0 && Date.now() < end; leaked = markedProcesses(runId)) await sleep(100);
  killProcesses(leaked);

  // ---- report -------------------------------------------------------------------------------------
  const sorted = [...outcomes.entries()].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
  console.log('');
  console.log(`toolwire cluster soak summary (${((Date.now() - startedAt) / 1000).toFixed(0)} s${interrupted ? ', interrupted' : ''}, seed ${o.seed})`);
  console.log(`  nodes ${o.nodes}, nats-servers ${o.natsServers}, hosts ${o.hosts}, callers ${o.callers}`);
  console.log(`  calls issued:               ${issued}`);
  console.log(`  outcomes:                   ${sorted.map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  const why = [...reasons.entries()].sort(([, a], [, b]) => b - a).slice(0, 16);
  console.log(`  why non-zero (top):         ${why.map(([k, v]) => `${v} × ${k}`).join('\n                              ')}`);
  console.log(`  unsettled (caller side):    ${unsettled}`);
  console.log(`  calls in flight on nodes:   ${inFlight} (after the wind-down; all nodes)`);
  console.log(`  unexpected outcomes:        ${unexpected.length}${unexpected.length ? `\n    ${unexpected.slice(0, 10).join('\n    ')}` : ''}`);
  console.log(`  leaked processes:           ${leaked.length}${leaked.length ? ` (${leaked.map((p) => `pid ${p.pid}: ${p.cmd}`).join('; ')})` : ''}`);
  console.log(`  chaos:                      ${[...chaos.entries()].map(([k, v]) => `${k} ×${v}`).join(', ')}`);
  return unsettled > 0 || inFlight !== 0 || unexpected.length > 0 || leaked.length > 0 ? 1 : 0;
}
