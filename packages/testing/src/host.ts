/**
 * `startHost`: a real tool host for a test, in this process or as a child process, always dialling
 * the server through a fault proxy of its own (`net`), which is how `disconnect()`/`reconnect()`
 * (and `pause()` of an in-process host) are done without touching the host.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Logger, ToolHost, type ToolHostOptions } from '@toolwire/client';
import { killChild, track, trackChild, untrack } from './cleanup.js';
import { Netns, type NetnsLink } from './netns-link.js';
import { FaultProxy } from './proxy.js';
import type { TestServer } from './server.js';
import { delayMs } from './connection.js';
import { type HostTools, checkTools, registerTools } from './tools.js';
import { waitForHost, waitUntil } from './wait.js';

/**
 * A server the kit did not start (a `toolwire serve` process, a staging server): where hosts dial
 * and a host token it accepts. `startHost`'s `name` is then only a label.
 */
export interface HostTarget {
  url: string;
  token: string;
}

/** Options of {@link startHost}. Times in ms. */
export interface StartHostOptions {
  /** Host identity (its token is made with `server.hostToken(name)`). Default `host1`, `host2`… */
  name?: string;
  /** Run the host in a child process (so `kill('SIGKILL')` and `pause()` act on a real process). Default false. */
  process?: boolean;
  /**
   * With `process: true`: run the child in a network namespace of its own, joined by a veth pair
   * (`host.netns`), so `host.netns.blackhole()` drops its packets in the kernel. Needs root, Linux,
   * `ip netns` and `tc` (`netnsSupport()`). Default false.
   */
  netns?: boolean;
  /**
   * More `ToolHostOptions` (not `server`/`token`). Defaults here: reconnect 20 → 200 ms,
   * `cancelGraceMs` 500, `drainMs` 200, logging off (in this process).
   */
  hostOptions?: Partial<Omit<ToolHostOptions, 'server' | 'token'>>;
  /** Environment of the child process (added to this one's). */
  env?: NodeJS.ProcessEnv;
  /** Bound on the host's first `advertised`; default 20000. */
  timeoutMs?: number;
}

/** A running tool host. `await using` closes it. */
export interface TestHost extends AsyncDisposable {
  readonly name: string;
  /** The fault proxy between this host and the server: `host.net.blackhole()`, `.latency(ms)`… */
  readonly net: FaultProxy;
  /** The host's network namespace (`netns: true`): `host.netns.blackhole()` drops at the kernel. Else undefined. */
  readonly netns: NetnsLink | undefined;
  /** The child's pid (`process: true`), else undefined. */
  readonly pid: number | undefined;
  /** The `ToolHost` (in this process), else undefined. */
  readonly host: ToolHost | undefined;
  /** Advertises answered so far (one per connect, plus one per tool-set change). */
  readonly advertisedCount: number;
  /**
   * Child: send `signal` (default SIGKILL) to the host process and wait for its exit (its subprocess
   * tools die with it: the host's reaper). In this process: reset the connection and close the host.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Child: SIGSTOP (the silent host: the heartbeat ends it). In this process: `net.blackhole()`. */
  pause(): void;
  /** Child: SIGCONT. In this process: `net.heal()`. */
  resume(): void;
  /** Cut the connection (RST) and refuse new ones; resolves once the server no longer lists the host (a {@link HostTarget}: once the proxy has no connection open). */
  disconnect(options?: { timeoutMs?: number }): Promise<void>;
  /** Heal `net` (and `netns`) and resolve once the host has connected and advertised again. */
  reconnect(options?: { timeoutMs?: number }): Promise<void>;
  /** Close the host (gracefully; a child is SIGKILLed after 10 s), its proxy and its namespace. Idempotent. */
  close(): Promise<void>;
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
let hostCount = 0;

/** The child entry beside this file, and the node flags to run it (tsx from source). */
function childCommand(): { entry: string; args: string[] } {
  const here = import.meta.url;
  const fromSource = here.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./host-child.${fromSource ? 'ts' : 'js'}`, here));
  return { entry, args: fromSource ? ['--conditions=@toolwire/source', '--import', 'tsx'] : [] };
}

/**
 * Start a real tool host advertising `tools` to `server` — a {@link TestServer}, or any server as
 * `{url, token}` — (through its own fault proxy, `net`) and resolve once the server answered its
 * first advertise.
 * @throws TypeError when `tools` is a map and `process: true` (a child can load only a path), when `netns`
 *   comes without `process`, or on a bad tool (then nothing is left open); RangeError for a `timeoutMs`
 *   that is negative, not a number or over 2^31 - 1; Error when the netns mode cannot run here (`netnsSupport()`)
 */
export async function startHost(server: TestServer | HostTarget, tools: HostTools, options: StartHostOptions = {}): Promise<TestHost> {
  if (options.process && typeof tools !== 'string') throw new TypeError('startHost: with {process: true}, tools must be a manifest or module path');
  checkTools(tools);
  const timeoutMs = delayMs('startHost timeoutMs', options.timeoutMs ?? 20_000);
  const name = options.name ?? `host${++hostCount}`;
  if (options.netns && !options.process) throw new TypeError('startHost: {netns: true} needs {process: true} (a namespace holds a process)');
  const token = 'hostToken' in server ? await server.hostToken(name) : server.token;
  const netns = options.netns ? await Netns.create() : undefined;
  let net: FaultProxy;
  try {
    net = await FaultProxy.start(server.url, { listen: netns?.serverAddress });
  } catch (error) {
    netns?.remove();
    throw error;
  }
  const hostOptions: ToolHostOptions = {
    reconnect: { baseMs: 20, maxMs: 200 },
    cancelGraceMs: 500,
    drainMs: 200,
    ...options.hostOptions,
    server: netns ? dialName(net.url, netns.serverName) : net.url,
    token,
  };
  let advertised = 0;
  let child: ChildProcess | undefined;
  let inProcess: ToolHost | undefined;
  let closing: Promise<void> | undefined;
  let stderr = '';

  if (options.process) {
    const { entry, args } = childCommand();
    const argv = [process.execPath, ...args, entry];
    const { command, args: commandArgs } = netns ? netns.wrap(argv) : { command: argv[0]!, args: argv.slice(1) };
    child = spawn(command, commandArgs, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'], detached: true });
    trackChild(child);
    child.on('error', () => {}); // a failed spawn or IPC send: the exit or a bounded wait reports it
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-8192)));
    child.on('message', (message: { type: string; message?: string }) => {
      if (message.type === 'advertised') advertised++;
      else if (message.type === 'failed') stderr += `${message.message ?? ''}\n`; // why it will exit
    });
    child.send({ type: 'start', options: hostOptions, tools });
  } else {
    inProcess = new ToolHost({ logger: silent, ...hostOptions });
    inProcess.on('advertised', () => advertised++);
    inProcess.on('error', () => {}); // reported through the events a test waits on
    try {
      await registerTools(inProcess, tools);
    } catch (error) {
      // A tool the host refuses (a bad name, an empty command): nothing of this host stays open.
      await net.close();
      throw error;
    }
  }

  const exited = child ? new Promise<void>((resolve) => child.once('exit', () => resolve())) : Promise.resolve();
  const handle: TestHost = {
    name,
    net,
    netns,
    pid: child?.pid,
    host: inProcess,
    get advertisedCount() {
      return advertised;
    },
    async kill(signal = 'SIGKILL') {
      if (child) {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') await exited;
        return;
      }
      net.reset();
      await inProcess!.close();
    },
    pause() {
      if (child) child.kill('SIGSTOP');
      else net.blackhole();
    },
    resume() {
      if (child) child.kill('SIGCONT');
      else net.heal();
    },
    async disconnect(o = {}) {
      net.refuse().reset();
      const timeoutMs = o.timeoutMs ?? 10_000;
      if ('hostToken' in server) await waitForHost(server, name, { connected: false, timeoutMs });
      else await waitUntil(() => net.connections.length === 0, `host ${name}'s connections to close`, { timeoutMs });
    },
    async reconnect(o = {}) {
      const before = advertised;
      net.heal();
      await netns?.heal();
      await waitUntil(() => advertised > before, `host ${name} to advertise again`, { timeoutMs: o.timeoutMs ?? 10_000 });
    },
    close() {
      closing ??= (async () => {
        if (child) {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGCONT');
            if (child.connected) child.send({ type: 'close' });
            const timer = setTimeout(() => killChild(child), 10_000);
            await exited;
            clearTimeout(timer);
          }
          killChild(child); // what is left of its group
        } else await inProcess!.close();
        await net.close();
        netns?.remove();
        untrack(handle);
      })();
      return closing;
    },
    [Symbol.asyncDispose]: () => handle.close(),
  };
  track(handle);

  try {
    if (inProcess) await bounded(inProcess.start(), timeoutMs, `host ${name} to advertise`);
    else {
      await Promise.race([
        waitUntil(() => advertised > 0, `host ${name} (process) to advertise`, { timeoutMs }),
        exited.then(() => {
          throw new Error(`host ${name} (process) exited ${child!.exitCode ?? child!.signalCode} before advertising: ${stderr}`);
        }),
      ]);
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/** `url` with its hostname replaced by `name`. */
function dialName(url: string, name: string): string {
  const u = new URL(url);
  u.hostname = name;
  return u.href.replace(/\/$/, '');
}

/** `promise`, or a rejection naming `what` after `ms`; the timer is cleared either way. */
async function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
