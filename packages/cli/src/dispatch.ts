/**
 * The `toolwire` command dispatcher: picks the command and loads only its module, so a command
 * pays for nothing it does not use (`--version` loads nothing; `tools` and `call` load no server,
 * tool host, logger or schema code).
 */
import { ExitCode } from '@toolwire/protocol/constants';
import { nearest } from './suggest.js';
import { VERSION } from './version.js';

export const usage = `usage: toolwire <command> [options]

commands:
  serve   run the central server (default 127.0.0.1:7700)
  host    run a tool host that advertises a manifest's tools
  tools   list the tools the server offers
  call    call one tool and exit with its exit code
  token   add, list and revoke host and caller tokens (the state folder)
  status  show hosts, tools, calls in flight and recent failures (--watch, --json)
  mcp     an MCP server on stdin/stdout that forwards to the server (for stdio-only MCP clients)

Run "toolwire <command> --help" for the options of one command.
`;

/** The commands, then the other words `run` takes as its first argument. */
const COMMANDS = ['serve', 'host', 'tools', 'call', 'token', 'status', 'mcp'] as const;
const WORDS = [...COMMANDS, 'help', 'version'];

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
    case 'token':
      return (await import('./commands/token.js')).tokenCommand(rest);
    case 'status':
      return (await import('./commands/status.js')).statusCommand(rest);
    case 'mcp':
      return (await import('./commands/mcp.js')).mcpCommand(rest);
    case '-V':
    case '--version':
    case 'version':
      process.stdout.write(`toolwire ${VERSION}\n`);
      return ExitCode.OK;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      // `toolwire help call` is `toolwire call --help`; `toolwire help hots` is an unknown command.
      if (command === 'help' && rest[0] !== undefined) return (COMMANDS as readonly string[]).includes(rest[0]) ? run([rest[0], '--help']) : run([rest[0]]);
      process.stdout.write(usage);
      return command === undefined ? ExitCode.USAGE : ExitCode.OK;
    default: {
      const option = command.startsWith('-');
      const near = nearest(command, option ? ['--help', '--version'] : WORDS);
      const problem = option
        ? `unknown option ${command}${near !== undefined ? `; did you mean ${near}?` : ''}`
        : `unknown command "${command}"${near !== undefined ? `; did you mean "${near}"?` : ''}`;
      process.stderr.write(`toolwire: ${problem}\nusage: toolwire <command> [options]\nRun "toolwire --help" for the commands.\n`);
      return ExitCode.USAGE;
    }
  }
}
