/**
 * One network namespace of the kernel half-open mode and the veth pair that joins it to this one,
 * each end with an address of a private /30 of 198.18.0.0/15 (the benchmarking range, RFC 2544):
 * `.1` on this side (where the host's fault proxy listens), `.2` in the namespace (the host).
 * The host dials a loopback *name*, {@link SERVER_NAME}, which resolves to `.1` in the namespace
 * only (`/etc/netns/<name>/hosts`, which `ip netns exec` mounts over `/etc/hosts`): the server
 * stays on 127.0.0.1 and its DNS-rebinding check (a loopback `Host`) passes unchanged.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { offExit, onExit } from './cleanup.js';
import { names, netnsSupport, run } from './netns.js';

const exec = promisify(execFile);

/** The name a netns host dials the server by (resolves to `serverAddress` inside its namespace). */
export const SERVER_NAME = 'server.toolwire.localhost';

/** The namespace of a host of `startHost(…, {process: true, netns: true})`: `host.netns`. */
export interface NetnsLink {
  /** The namespace's name (`ip netns list`), `toolwire-<pid>-<n>`. */
  readonly name: string;
  /** The veth end on this side, `tw<pid>s<n>`. */
  readonly serverVeth: string;
  /** The veth end inside the namespace, `tw<pid>h<n>`. */
  readonly hostVeth: string;
  /** This side's address (the host dials its proxy here), e.g. `198.18.7.1`. */
  readonly serverAddress: string;
  /** The host's address in the namespace, e.g. `198.18.7.2`. */
  readonly hostAddress: string;
  /** The name the host dials, `server.toolwire.localhost` (`serverAddress` inside the namespace). */
  readonly serverName: string;
  /** True between {@link blackhole} and {@link heal}. */
  readonly dropping: boolean;
  /**
   * Both veth ends drop every packet in the kernel from now on (no FIN, no RST reaches either side:
   * a TCP peer only retransmits); resolves once the drop is in place. Idempotent.
   */
  blackhole(): Promise<void>;
  /** Stop dropping (TCP's retransmissions then get through); idempotent. */
  heal(): Promise<void>;
}

let count = 0;
const used = new Set<number>();

/** The first free /30 index from `start` (not used in this process, no address of it on this machine). */
function freeSlot(start: number): number {
  const taken = run('ip', ['-o', '-4', 'addr', 'show']).stdout;
  for (let i = 0; i < 32_768; i++) {
    const k = (start + i) % 32_768;
    if (used.has(k) || taken.includes(` ${address(k, 1)}/`) || taken.includes(` ${address(k, 2)}/`)) continue;
    used.add(k);
    return k;
  }
  throw new Error('netns: no free /30 left in 198.18.0.0/15');
}

/** Address `last` (1 or 2) of /30 number `k` of 198.18.0.0/15. */
function address(k: number, last: number): string {
  const n = (198 << 24) + (18 << 16) + k * 4 + last;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export class Netns implements NetnsLink {
  readonly name: string;
  readonly serverVeth: string;
  readonly hostVeth: string;
  readonly serverAddress: string;
  readonly hostAddress: string;
  readonly serverName = SERVER_NAME;
  #dropping = false;
  readonly #slot: number;
  #removed = false;

  private constructor(n: number, slot: number) {
    ({ namespace: this.name, serverVeth: this.serverVeth, hostVeth: this.hostVeth } = names(n));
    this.#slot = slot;
    this.serverAddress = address(slot, 1);
    this.hostAddress = address(slot, 2);
  }

  /**
   * Make a namespace joined by a veth pair, both ends up with their /30 addresses (and `lo` up in
   * the namespace). Removed by {@link remove}, or at this process's exit.
   * @throws Error when the mode cannot run here (`netnsSupport()`'s reason) or a command fails
   */
  static async create(): Promise<Netns> {
    const support = netnsSupport();
    if (!support.available) throw new Error(`startHost({netns: true}): ${support.reason}`);
    count = (count % 9_999) + 1; // 1…9999 (0 is the probe's)
    const n = count;
    const link = new Netns(n, freeSlot(((process.pid % 2048) * 16 + n) % 32_768));
    onExit(link);
    const inside = ['netns', 'exec', link.name, 'ip'];
    try {
      for (const args of [
        ['netns', 'add', link.name],
        ['link', 'add', link.serverVeth, 'type', 'veth', 'peer', 'name', link.hostVeth, 'netns', link.name],
        ['addr', 'add', `${link.serverAddress}/30`, 'dev', link.serverVeth],
        ['link', 'set', link.serverVeth, 'up'],
        [...inside, 'addr', 'add', `${link.hostAddress}/30`, 'dev', link.hostVeth],
        [...inside, 'link', 'set', link.hostVeth, 'up'],
        [...inside, 'link', 'set', 'lo', 'up'],
      ]) {
        await ip(args);
      }
      mkdirSync(`/etc/netns/${link.name}`, { recursive: true });
      writeFileSync(`/etc/netns/${link.name}/hosts`, `127.0.0.1 localhost\n::1 localhost\n${link.serverAddress} ${SERVER_NAME}\n`);
    } catch (error) {
      link.remove();
      throw error;
    }
    return link;
  }

  get dropping(): boolean {
    return this.#dropping;
  }

  /** The command line that runs `argv` inside the namespace. */
  wrap(argv: readonly string[]): { command: string; args: string[] } {
    return { command: 'ip', args: ['netns', 'exec', this.name, ...argv] };
  }

  async blackhole(): Promise<void> {
    if (this.#dropping || this.#removed) return;
    this.#dropping = true;
    await Promise.all([
      tc(['qdisc', 'replace', 'dev', this.serverVeth, 'root', 'pfifo', 'limit', '0']),
      ip(['netns', 'exec', this.name, 'tc', 'qdisc', 'replace', 'dev', this.hostVeth, 'root', 'pfifo', 'limit', '0']),
    ]);
  }

  async heal(): Promise<void> {
    if (!this.#dropping || this.#removed) return;
    this.#dropping = false;
    await Promise.all([tc(['qdisc', 'del', 'dev', this.serverVeth, 'root']), ip(['netns', 'exec', this.name, 'tc', 'qdisc', 'del', 'dev', this.hostVeth, 'root'])]);
  }

  /**
   * Delete the veth pair, the namespace and its hosts file (synchronous, so the exit hook can do it too; the
   * namespace itself is freed by the kernel once no process is left in it). Idempotent.
   */
  remove(): void {
    if (this.#removed) return;
    this.#removed = true;
    run('ip', ['link', 'del', this.serverVeth]);
    run('ip', ['netns', 'del', this.name]);
    rmSync(`/etc/netns/${this.name}`, { recursive: true, force: true });
    used.delete(this.#slot);
    offExit(this);
  }
}

async function ip(args: string[]): Promise<void> {
  await command('ip', args);
}

async function tc(args: string[]): Promise<void> {
  await command('tc', args);
}

async function command(file: string, args: string[]): Promise<void> {
  try {
    await exec(file, args, { timeout: 10_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`netns: ${file} ${args.join(' ')} failed${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
}
