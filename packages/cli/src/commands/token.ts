/**
 * `toolwire token` — make, list and revoke the credentials in the server's state folder
 * (`../state.ts`). A running `toolwire serve` on that folder applies each change within 1 s (it
 * watches `tokens.json`, see `serve-state.ts`): a revoked host's session is closed 1008 and its
 * calls settle 69; a revoked caller's MCP sessions are closed.
 *
 * ```text
 * toolwire token add host NAME [--server URL] [--state-dir DIR]
 * toolwire token add caller NAME [--grant a,b|*] [--state-dir DIR]
 * toolwire token list [--json] [--state-dir DIR]
 * toolwire token revoke NAME [--state-dir DIR]
 * ```
 * `add` prints the token once (the folder keeps only its SHA-256 digest); `add host` also prints
 * the commands to run on the other machine. `list` prints names, roles, created and last seen,
 * never a token or digest. Exit status: 0; 64 (EX_USAGE) bad usage, an unknown role, a bad name or
 * grant; 65 (EX_DATAERR) the name exists already, or `tokens.json` does not parse; 66 (EX_NOINPUT)
 * `list` or `revoke` of a state folder that does not exist (`add` makes it, and says so on stderr);
 * 67 (EX_NOUSER) revoking a name the folder does not hold; 73 (EX_CANTCREAT) the state folder is not a folder or
 * cannot be written; 75 (EX_TEMPFAIL) another command held the folder's lock for 10 s; 77 (EX_NOPERM)
 * permission denied. On an error nothing is written; two commands at once both land (the lock).
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol/constants';
import { readLocalCredentials, toolwireHome } from '../credentials.js';
import { isLoopback } from '../loopback.js';
import {
  type StoredCredential,
  StateError,
  ensureStateDir,
  nameProblem,
  readLastSeen,
  readState,
  requireStateDir,
  tokenDigest,
  withStateLock,
  writeState,
} from '../state.js';
import { argvProblem, misuse } from '../usage.js';
import { generateToken } from './serve-state.js';
import { quotedArg } from '../terminal-text.js';

export const tokenUsage = `usage: toolwire token add host NAME | add caller NAME [--grant LIST] | list | revoke NAME [options]

  add host NAME        make a host token; prints it once and how to start that host
  add caller NAME      make a caller token (MCP door); prints it once
  list                 names, roles, created, last seen (never tokens)
  revoke NAME          remove a credential; a running server closes its sessions within 1 s
  --grant LIST         add caller: tool names it may call, comma-separated, or * (default *)
  --server URL         add host: the server URL to print (default ws://THIS-HOST:PORT)
  --state-dir DIR      state folder (default $TOOLWIRE_HOME, else ~/.toolwire)
  --json               list: one JSON array
  -h, --help           show this help

Names match [A-Za-z0-9_-]{1,64} and are unique across hosts and callers.
exit status: 0, 64 bad usage, role, name or grant, 65 the name exists or tokens.json is
bad, 66 list/revoke: no state folder there, 67 revoke of an unknown name, 73 the state
folder is not a folder or not writable, 75 the folder stayed locked by another command,
77 permission denied.
`;

const flags = {
  grant: { type: 'string' },
  server: { type: 'string' },
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Where `tokenCommand` writes and reads its environment (default: the process's own). */
export interface TokenIo {
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
}

function parseGrant(text: string | undefined): string[] | string {
  if (text === undefined || text === '*') return ['*'];
  const grant = text.split(',').map((g) => g.trim());
  if (grant.some((g) => !/^[A-Za-z0-9_-]{1,64}$/.test(g))) return `--grant must be * or tool names [A-Za-z0-9_-]{1,64} separated by commas, got ${quotedArg(text)}`;
  return grant;
}

/**
 * The server URL to print for `add host`: `--server`, else this machine's name with the port and
 * scheme of the local credentials file; `loopbackOnly` when that file says its server listens on a
 * loopback address (no other machine reaches it there).
 */
async function serverUrl(given: string | undefined, dir: string): Promise<{ url: string; loopbackOnly: string | undefined }> {
  if (given !== undefined) return { url: given, loopbackOnly: undefined };
  const local = await readLocalCredentials({ TOOLWIRE_HOME: dir });
  const url = local ? new URL(local.server) : undefined;
  const listen = local?.listen;
  return {
    url: `${url?.protocol === 'wss:' ? 'wss' : 'ws'}://${hostname()}:${url?.port || '7700'}`,
    loopbackOnly: listen !== undefined && isLoopback(listen.host) ? listen.host : undefined,
  };
}

/** Run `toolwire token` with `argv` (the arguments after `token`); resolves with the exit status. */
export async function tokenCommand(argv: string[], io: TokenIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const usageError = (message: string): number => {
    stderr.write(misuse('token', message, tokenUsage));
    return ExitCode.USAGE;
  };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: flags, allowPositionals: true, strict: true });
  } catch (error) {
    return usageError(argvProblem(error, flags, argv));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    stdout.write(tokenUsage);
    return ExitCode.OK;
  }
  const [action, ...args] = positionals;
  const dir = values['state-dir'] ?? toolwireHome(io.env);
  const fail = (error: unknown): number => {
    if (!(error instanceof StateError)) throw error;
    stderr.write(`toolwire token: ${error.message}\n`);
    return error.exitCode;
  };

  if (action === 'add') {
    const [role, name, extra] = args;
    if (role !== 'host' && role !== 'caller')
      return usageError(role === undefined ? 'add needs a role: host or caller' : `unknown role "${role}": use host or caller`);
    if (name === undefined) return usageError(`add ${role} needs a NAME`);
    if (extra !== undefined) return usageError(`unexpected argument ${JSON.stringify(extra)}`);
    const bad = nameProblem(name, role);
    if (bad !== undefined) return usageError(bad);
    if (role === 'host' && values.grant !== undefined) return usageError('--grant is for callers');
    const grant = parseGrant(values.grant);
    if (typeof grant === 'string') return usageError(grant);
    try {
      // Said aloud: a mistyped --state-dir would otherwise make a folder no server reads.
      if (await ensureStateDir(dir)) stderr.write(`toolwire token: made the state folder ${dir} (mode 0700)\n`);
      const token = generateToken();
      await withStateLock(dir, async () => {
        const state = await readState(dir);
        const taken = state.credentials.find((c) => c.name === name);
        if (taken !== undefined) throw new StateError(`"${name}" exists already (a ${taken.role}); revoke it first to make a new token`, ExitCode.DATA_ERR);
        const entry: StoredCredential = { name, role, tokenDigest: tokenDigest(token), created: new Date().toISOString(), ...(role === 'caller' && { grant }) };
        await writeState(dir, { schema: 1, credentials: [...state.credentials, entry] });
      });
      const lines = [`${role} token for "${name}" (shown once; ${dir} keeps only its digest):`, `  ${token}`, ''];
      if (role === 'host') {
        const { url, loopbackOnly } = await serverUrl(values.server, dir);
        lines.push(
          'On the other machine, put it in a file only you can read, then start the host:',
          `  (umask 077 && mkdir -p ~/.toolwire && printf '%s' '${token}' > ~/.toolwire/host-token)`,
          `  toolwire host --server ${url} --token-file ~/.toolwire/host-token --manifest tools.json`,
        );
        if (values.server === undefined) {
          lines.push(
            `(${new URL(url).hostname} is this machine's name: use the name or address the other machine reaches this server by — with TLS, one`,
            ` the server's certificate names — or pass --server URL to print it; see README "Add a machine")`,
          );
        }
        if (loopbackOnly !== undefined) {
          lines.push(
            `(the server of ${dir} listens on ${loopbackOnly} only: another machine cannot reach it there; restart it with`,
            ` --listen 0.0.0.0:PORT and TLS, or put a proxy in front of it; see README "Add a machine")`,
          );
        }
        // A wss:// URL already says TLS; only the private CA is left to say.
        const tls = new URL(url).protocol === 'wss:';
        lines.push(
          tls
            ? `(add --ca ca.pem, a copy of the server's CA certificate, when that CA is private)`
            : `(use wss:// and add --ca ca.pem when the server runs TLS with a private CA)`,
        );
      } else {
        lines.push(`Callers use it as "Authorization: Bearer <token>" at /mcp, e.g. TOOLWIRE_TOKEN=<token> toolwire tools --server URL`);
      }
      lines.push(`A running server on ${dir} accepts it within 1 s.`);
      stdout.write(`${lines.join('\n')}\n`);
      return ExitCode.OK;
    } catch (error) {
      return fail(error);
    }
  }

  if (action === 'revoke') {
    const [name, extra] = args;
    if (name === undefined) return usageError('revoke needs a NAME');
    if (extra !== undefined) return usageError(`unexpected argument ${JSON.stringify(extra)}`);
    try {
      await requireStateDir(dir);
      const gone = await withStateLock(dir, async () => {
        const state = await readState(dir);
        const found = state.credentials.find((c) => c.name === name);
        if (found === undefined) throw new StateError(`no credential named "${name}" in ${dir} (see toolwire token list)`, ExitCode.NO_USER);
        await writeState(dir, { schema: 1, credentials: state.credentials.filter((c) => c !== found) });
        return found;
      });
      stdout.write(`revoked ${gone.role} "${name}"; a running server on ${dir} closes its sessions within 1 s\n`);
      return ExitCode.OK;
    } catch (error) {
      return fail(error);
    }
  }

  if (action === 'list') {
    if (args.length > 0) return usageError(`unexpected argument ${JSON.stringify(args[0])}`);
    try {
      await requireStateDir(dir);
      const state = await readState(dir);
      const seen = await readLastSeen(dir);
      const rows = state.credentials.map((c) => ({
        name: c.name,
        role: c.role,
        ...(c.grant && { grant: c.grant }),
        created: c.created,
        lastSeen: seen[`${c.role}:${c.name}`] ?? null,
      }));
      if (values.json) {
        stdout.write(`${JSON.stringify(rows)}\n`);
      } else {
        const table = [
          ['NAME', 'ROLE', 'CREATED', 'LAST SEEN', 'GRANT'],
          ...rows.map((r) => [r.name, r.role, r.created, r.lastSeen ?? 'never', r.grant?.join(',') ?? '']),
        ];
        const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
        stdout.write(
          table
            .map((row) =>
              row
                .map((cell, i) => cell.padEnd(widths[i]!))
                .join('  ')
                .trimEnd(),
            )
            .join('\n') + '\n',
        );
      }
      return ExitCode.OK;
    } catch (error) {
      return fail(error);
    }
  }

  if (action === undefined) return usageError('a subcommand is required: add, list or revoke');
  return usageError(`unknown subcommand "${action}": use add, list or revoke`);
}
