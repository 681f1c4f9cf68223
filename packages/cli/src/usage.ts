/**
 * How the commands report misuse: one line naming the problem, the command's usage line, and where
 * the options are described — not the whole help. Also turns `node:util` `parseArgs` errors into
 * such a line, naming the nearest known flag for an unknown one.
 */
import { nearest } from './suggest.js';

/** The first line of a command's help text (`usage: toolwire call NAME … [options]`). */
export function usageLine(help: string): string {
  return help.slice(0, help.indexOf('\n') === -1 ? undefined : help.indexOf('\n'));
}

/**
 * The text printed on misuse of `toolwire <command>`:
 * ```text
 * toolwire call: NAME is required
 * usage: toolwire call NAME [INPUT_JSON | -] [options]
 * Run "toolwire call --help" for the options.
 * ```
 */
export function misuse(command: string, problem: string, help: string): string {
  return `toolwire ${command}: ${problem}\n${usageLine(help)}\nRun "toolwire ${command} --help" for the options.\n`;
}

/** The flags of a command as given to `parseArgs` (only what naming them needs). */
export type FlagSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/**
 * One line for an error thrown by `parseArgs` with `strict: true`: `unknown option --timout; did
 * you mean --timeout?`, `option --timeout needs a value`, `unexpected argument "extra"`. Anything
 * else keeps its own message.
 */
export function argvProblem(error: unknown, flags: FlagSpec, argv: readonly string[] = []): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const quoted = /'([^']*)'/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && quoted !== undefined) {
    const given = quoted.split('=')[0]!;
    const known = Object.keys(flags).map((name) => `--${name}`);
    const near = given.startsWith('--') ? nearest(given, known) : undefined;
    return `unknown option ${given}${near !== undefined ? `; did you mean ${near}?` : ''}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && quoted !== undefined) {
    const flag = quoted.split(' ')[0]!;
    if (/does not take an argument/.test(message)) return `option ${flag} takes no value`;
    const next = argv[argv.indexOf(flag) + 1];
    // `--token -x…`: a value that starts with `-` reads as a flag; `--token=-x…` passes it.
    if (argv.includes(flag) && next !== undefined && next.startsWith('-') && !isFlag(next, flags)) {
      return `option ${flag} needs a value (a value that starts with "-" is written ${flag}=VALUE)`;
    }
    return `option ${flag} needs a value`;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && quoted !== undefined) return `unexpected argument ${JSON.stringify(quoted)}`;
  return message;
}

/**
 * `argv` with each negative number that follows a flag taking a value joined to it (`--timeout -5` →
 * `--timeout=-5`), as getopt and curl read it: `parseArgs` would read `-5` as a flag and fail with
 * its own message, while the command's check of that value names the flag's own rule (`--max-queued
 * must be a whole number ≥ 0`). No toolwire flag is a digit, so nothing else changes.
 */
export function joinNegativeValues(argv: readonly string[], flags: FlagSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (arg === '--') return [...out, ...argv.slice(i)];
    if (arg.startsWith('--') && !arg.includes('=') && flags[arg.slice(2)]?.type === 'string' && next !== undefined && /^-\.?\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** Whether `arg` names one of `flags` (`--name`, `--name=…` or `-s`). */
function isFlag(arg: string, flags: FlagSpec): boolean {
  if (arg.startsWith('--')) return Object.hasOwn(flags, arg.slice(2).split('=')[0]!);
  return arg.length === 2 && Object.values(flags).some((spec) => spec.short === arg[1]);
}
