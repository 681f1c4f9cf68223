/**
 * `toolwire` — one command line for the whole system:
 *
 *   toolwire serve [--listen HOST:PORT] [--config FILE]         run the central server
 *   toolwire host  --server URL --token T --manifest FILE       run a tool host
 *   toolwire tools --server URL --token T [--json]              list the tools
 *   toolwire call NAME [INPUT_JSON] --server URL --token T [--timeout MS]
 *
 * `TOOLWIRE_SERVER` and `TOOLWIRE_TOKEN` stand in for `--server` and `--token`; without either, the
 * local credentials file written by `toolwire serve` is used. Exit status: see README "Failure semantics".
 */
import { ExitCode } from '@toolwire/protocol';

const usage = `usage: toolwire <command> [options]

commands:
  serve   run the central server (default 127.0.0.1:7700)
  host    run a tool host that advertises a manifest's tools
  tools   list the tools the server offers
  call    call one tool and exit with its exit code

Run "toolwire <command> --help" for the options of one command.
`;

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('@toolwire/server/cli')).serveCommand(rest);
    case 'host':
      return (await import('@toolwire/client/cli')).hostCommand(rest);
    case 'tools':
      return (await import('@toolwire/client/cli')).toolsCommand(rest);
    case 'call':
      return (await import('@toolwire/client/cli')).callCommand(rest);
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

const code = await run(process.argv.slice(2));
// Let stdout/stderr drain before exiting so a large capture is not cut short.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
process.exit(code);
