/**
 * The `toolwire` command dispatcher: picks the command and loads only its module, so a command
 * pays for nothing it does not use.
 */
import { ExitCode } from '@toolwire/protocol';
import { VERSION } from './version.js';

export const usage = `usage: toolwire <command> [options]

commands:
  serve   run the central server (default 127.0.0.1:7700)
  host    run a tool host that advertises a manifest's tools
  tools   list the tools the server offers
  call    call one tool and exit with its exit code

Run "toolwire <command> --help" for the options of one command.
`;

/**
 * Run `toolwire ARGV…` (the arguments after the program name) and resolve with the exit status.
 * Never calls `process.exit`.
 */
export async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('./commands/serve.js')).serveCommand(rest);
    case 'host':
      return (await import('./commands/host.js')).hostCommand(rest);
    case 'tools':
      return (await import('./commands/tools.js')).toolsCommand(rest);
    case 'call':
      return (await import('./commands/call.js')).callCommand(rest);
    case '-V':
    case '--version':
    case 'version':
      process.stdout.write(`toolwire ${VERSION}\n`);
      return ExitCode.OK;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(usage);
      return command === undefined ? ExitCode.USAGE : ExitCode.OK;
    default:
      process.stderr.write(`toolwire: unknown command "${command}"\n\n${usage}`);
      return ExitCode.USAGE;
  }
}
