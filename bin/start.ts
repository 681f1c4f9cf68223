/**
 * `pnpm start`: the main job on this machine. Starts `toolwire serve` on its embedded default
 * (127.0.0.1:7700, fresh tokens written to the local credentials file) and, once it listens, one
 * local tool host advertising `examples/tools.json`. Ctrl-C stops both.
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
import { SOURCE_NODE_ARGS } from '../test/source-node.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'packages', 'cli', 'src', 'main.ts');
const manifest = join(root, 'examples', 'tools.json');
const children: ChildProcess[] = [];
/** What a child's `exit` event carries: its exit code, or the signal that ended it. */
type Exit = [code: number | null, signal: NodeJS.Signals | null];

function toolwire(args: string[], stdio: 'pipe' | 'inherit'): ChildProcess {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, cli, ...args], {
    cwd: root,
    stdio: ['ignore', stdio, 'inherit'],
  });
  children.push(child);
  return child;
}

/** Set once a stop began (Ctrl-C, SIGTERM, or one of the two processes ended). */
let stopping = false;
/** The tool host's own failure, when it ended by itself: its exit code, or 128 + signal number. */
let hostFailure: number | undefined;

function stopAll(signal: NodeJS.Signals): void {
  stopping = true;
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}
process.on('SIGINT', () => stopAll('SIGINT'));
process.on('SIGTERM', () => stopAll('SIGTERM'));
// A closed terminal (SIGHUP) stops both too, rather than leave them running without their parent.
process.on('SIGHUP', () => stopAll('SIGTERM'));

const server = toolwire(['serve', ...process.argv.slice(2)], 'pipe');
const serverExit = once(server, 'exit') as Promise<Exit>;

// Echo the server's stdout and start the host when it says it is listening.
let hostStarted = false;
let hostExit: Promise<Exit> | undefined;
createInterface({ input: server.stdout! }).on('line', (line) => {
  process.stdout.write(`${line}\n`);
  if (!hostStarted && /listening/i.test(line)) {
    hostStarted = true;
    const host = toolwire(['host', '--manifest', manifest, '--root', root], 'inherit');
    hostExit = once(host, 'exit') as Promise<Exit>;
    void hostExit.then(([code, signal]) => {
      if (stopping) return;
      // The host ended by itself (an error, or killed: `kill -9` gives no exit code): say so and stop
      // the server too, rather than leave a server without its tools.
      const how = signal ? `killed by ${String(signal)}` : `exit code ${String(code)}`;
      process.stderr.write(`toolwire start: the tool host ended (${how}); stopping the server\n`);
      hostFailure = typeof code === 'number' ? code : 128 + (constants.signals[signal as NodeJS.Signals] ?? 0);
      stopAll('SIGTERM');
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

const [serverCode] = await serverExit;
stopAll('SIGTERM');
if (hostExit) await hostExit;
process.exitCode = hostFailure || (typeof serverCode === 'number' ? serverCode : 0);
