/**
 * `pnpm start`: the main job on this machine. Starts `toolwire serve` on its embedded default
 * (127.0.0.1:7700, the state folder's lasting tokens, the local ones written to the local
 * credentials file) and, once it listens, one local tool host advertising `examples/tools.json`.
 * Ctrl-C stops both. When the local host ends by itself — most often because another host took its
 * identity `local` (close 4000: the local host exits 69) — this says so, naming the address the
 * newer connection came from (read from the server's log line), and the server keeps running.
 *
 * Each runs as its own process, exactly as on two machines; this script only starts, watches and
 * stops them. Extra arguments are passed to `toolwire serve` (e.g. `pnpm start --listen 127.0.0.1:7800`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { ExitCode } from '@toolwire/protocol/constants';
import { SOURCE_NODE_ARGS } from '../test/source-node.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'packages', 'cli', 'src', 'main.ts');
const manifest = join(root, 'examples', 'tools.json');
const children: ChildProcess[] = [];
/** `toolwire host` exits 69 (EX_UNAVAILABLE) when a newer connection of its identity replaced it. */
const REPLACED_EXIT = ExitCode.UNAVAILABLE;
/** What a child's `exit` event carries: its exit code, or the signal that ended it. */
type Exit = [code: number | null, signal: NodeJS.Signals | null];

function toolwire(args: string[], stdio: 'pipe' | 'inherit', stderr: 'pipe' | 'inherit' = 'inherit'): ChildProcess {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, cli, ...args], {
    cwd: root,
    stdio: ['ignore', stdio, stderr],
  });
  children.push(child);
  return child;
}

/** Set once a stop began (Ctrl-C, SIGTERM, or one of the two processes ended). */
let stopping = false;
/** Where the connection that replaced the local host came from, from the server's log. */
let replacedBy: string | undefined;
/** Told when {@link replacedBy} is set. */
let onReplacedBy: (() => void) | undefined;
/**
 * How long a replaced host's exit waits for the server's "host replaced" log line, ms: the server
 * writes its log lines a few ms late (held to be written together), and the host may exit first.
 */
const REPLACED_LINE_WAIT_MS = 2_000;

/** Resolves once {@link replacedBy} is known, or after {@link REPLACED_LINE_WAIT_MS}. */
function replacedByKnown(): Promise<void> {
  if (replacedBy !== undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, REPLACED_LINE_WAIT_MS);
    timer.unref(); // never holds the script open after a stop
    onReplacedBy = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

function stopAll(signal: NodeJS.Signals): void {
  stopping = true;
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}
process.on('SIGINT', () => stopAll('SIGINT'));
process.on('SIGTERM', () => stopAll('SIGTERM'));
// A closed terminal (SIGHUP) stops both too, rather than leave them running without their parent.
process.on('SIGHUP', () => stopAll('SIGTERM'));

const server = toolwire(['serve', ...process.argv.slice(2)], 'pipe', 'pipe');
const serverExit = once(server, 'exit') as Promise<Exit>;

// Echo the server's log and remember where a replacing connection of "local" came from.
createInterface({ input: server.stderr! }).on('line', (line) => {
  process.stderr.write(`${line}\n`);
  if (!line.includes('host replaced')) return;
  try {
    const entry = JSON.parse(line) as { host?: unknown; remote?: unknown };
    if (entry.host === 'local' && typeof entry.remote === 'string') {
      replacedBy = entry.remote;
      onReplacedBy?.();
    }
  } catch {
    // not a log line of ours
  }
});

// Echo the server's stdout and start the host when it says it is listening.
let hostStarted = false;
let hostExit: Promise<Exit> | undefined;
createInterface({ input: server.stdout! }).on('line', (line) => {
  process.stdout.write(`${line}\n`);
  if (!hostStarted && /listening/i.test(line)) {
    hostStarted = true;
    const host = toolwire(['host', '--manifest', manifest, '--root', root], 'inherit');
    hostExit = once(host, 'exit') as Promise<Exit>;
    void hostExit.then(async ([code, signal]) => {
      if (stopping) return;
      if (code === REPLACED_EXIT) await replacedByKnown();
      if (stopping) return;
      // The host ended by itself (replaced, an error, or killed: `kill -9` gives no exit code): say
      // what happened and keep the server serving the hosts that remain.
      const what =
        code === REPLACED_EXIT
          ? `was replaced by another host using the identity "local"${replacedBy !== undefined ? ` from ${replacedBy}` : ''} (close 4000)`
          : `ended (${signal ? `killed by ${String(signal)}` : `exit code ${String(code)}`})`;
      process.stderr.write(
        `toolwire start: the local tool host "local" ${what}; the server keeps running (Ctrl-C stops it). ` +
          'Give another machine its own token: pnpm toolwire token add host NAME\n',
      );
    });
    // The banner arrives in one write; print the how-to after all of its lines.
    setImmediate(() =>
      process.stdout.write(
        [
          '',
          'toolwire is up: one server and one local tool host ("local") with examples/tools.json.',
          'From another terminal in this folder:',
          '  pnpm toolwire tools',
          `  pnpm toolwire call local__read_file '{"path":"README.md"}'`,
          `  pnpm toolwire call local__sleep '{"seconds":30}' --timeout 500`,
          'Ctrl-C here stops both.',
          '',
        ].join('\n'),
      ),
    );
  }
});

const [serverCode, serverSignal] = await serverExit;
stopAll('SIGTERM');
if (hostExit) await hostExit;
process.exitCode = typeof serverCode === 'number' ? serverCode : 128 + (constants.signals[serverSignal as NodeJS.Signals] ?? 0);
