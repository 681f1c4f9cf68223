/**
 * `toolwire status` — what the server is doing: connected hosts, their tools, calls in flight and
 * recent failures (the status page's picture, `GET /status/snapshot` with the caller token).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseArgs } from 'node:util';
import { ExitCode } from '@toolwire/protocol/constants';
import { missingEndpointMessage, resolveEndpoint, unsendableTokenMessage } from '../endpoint.js';
import { type CliIO, processIO, waitForSignal, write } from '../io.js';
import { tlsReason } from '../caller/tls-reason.js';
import { mcpUrl } from '../caller/url.js';
import { msProblem, parseMs } from '../ms.js';
import { argvProblem, joinNegativeValues, misuse } from '../usage.js';
import { type StatusAnswer, statusText } from './status-text.js';

// eslint-disable-next-line no-control-regex -- a server's text must not carry terminal escapes to the terminal
const CONTROL = /[\u0000-\u001f\u007f]/g;

export const statusUsage = `usage: toolwire status [options]

Show what the server is doing: connected hosts (address, protocol, heartbeat), their tools, calls in
flight (id, tool, host, caller, running time, output so far) and recent failures with exit codes.
The same picture, live in a browser: http://<server>/status (log in with a caller token).

options:
  --server URL          server URL: ws://h:p, http://h:p, or h:p (http:// assumed)
                        (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T             caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --json                print the snapshot as JSON (times in ms since the epoch)
  --watch               print it again every --interval until Ctrl-C (the screen is cleared on a terminal)
  --interval MS         time between two --watch prints (default 2000)
  --connect-timeout MS  time allowed for each answer (default 10000)
  -h, --help            show this help

exit status: 0 ok, 64 bad usage, 69 server unreachable or no answer within --connect-timeout,
70 unexpected failure of this command, 75 refused for now (HTTP 429), 77 token refused.
`;

/** Largest snapshot read, bytes. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const DEFAULT_INTERVAL_MS = 2_000;
const DEFAULT_TIMEOUT_MS = 10_000;

const flags = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  watch: { type: 'boolean' },
  interval: { type: 'string' },
  'connect-timeout': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A failed fetch of the snapshot, with the exit status it means. */
class StatusFailure extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** `GET <server>/status/snapshot` with the caller token. @throws StatusFailure */
function fetchSnapshot(url: URL, token: string, timeoutMs: number): Promise<StatusAnswer> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let total = 0;
      res.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > MAX_ANSWER_BYTES) req.destroy(new StatusFailure(ExitCode.UNAVAILABLE, `the answer of ${url.href} is larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status === 401 || status === 403) return reject(new StatusFailure(ExitCode.NO_PERM, `token refused by ${url.href} (HTTP ${status})`));
        if (status === 429) return reject(new StatusFailure(ExitCode.TEMPFAIL, `refused by ${url.href} (HTTP 429): retry later`));
        if (status === 404)
          return reject(new StatusFailure(ExitCode.UNAVAILABLE, `${url.href} has no status page (HTTP 404): is it a toolwire server of this version?`));
        if (status !== 200) {
          // A plain-text reason's first line (e.g. a TLS port answering http://: "this port speaks TLS: …"), without control characters.
          const plain = /^text\/plain\b/.test(res.headers['content-type'] ?? '');
          const why = plain ? body.split(/\r?\n/, 1)[0]!.replace(CONTROL, '?').slice(0, 200) : '';
          return reject(new StatusFailure(ExitCode.UNAVAILABLE, `cannot read ${url.href}: HTTP ${status}${why ? `: ${why}` : ''}`));
        }
        try {
          const answer = JSON.parse(body) as StatusAnswer;
          if (!Array.isArray(answer.hosts) || !Array.isArray(answer.calls) || !Array.isArray(answer.recent)) throw new Error('not a status snapshot');
          resolve(answer);
        } catch (error) {
          reject(new StatusFailure(ExitCode.UNAVAILABLE, `server error: ${url.href} answered ${(error as Error).message}`));
        }
      });
      res.on('error', (error) => reject(error));
    });
    req.on('timeout', () => req.destroy(new StatusFailure(ExitCode.UNAVAILABLE, `no answer from ${url.href} within ${timeoutMs} ms (--connect-timeout)`)));
    req.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        error instanceof StatusFailure
          ? error
          : new StatusFailure(ExitCode.UNAVAILABLE, `cannot reach server ${url.href}: ${tlsReason(error) ?? error.code ?? error.message}`),
      );
    });
    req.end();
  });
}

/** `toolwire status …`. Returns the exit status (see {@link statusUsage}). */
export async function statusCommand(argv: string[], io: CliIO = processIO()): Promise<number> {
  let values: { server?: string; token?: string; json?: boolean; watch?: boolean; interval?: string; 'connect-timeout'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, flags), options: flags, allowPositionals: false, strict: true }));
  } catch (error) {
    return usageError(io, argvProblem(error, flags, argv));
  }
  if (values.help) {
    await write(io.stdout, statusUsage);
    return ExitCode.OK;
  }
  const timeoutMs = parseMs(values['connect-timeout'], DEFAULT_TIMEOUT_MS);
  if (timeoutMs === undefined) return usageError(io, msProblem('--connect-timeout', values['connect-timeout']));
  const intervalMs = parseMs(values.interval, DEFAULT_INTERVAL_MS);
  if (intervalMs === undefined) return usageError(io, msProblem('--interval', values.interval));
  if (values.interval !== undefined && !values.watch) return usageError(io, '--interval goes with --watch');
  const { server, token } = await resolveEndpoint('caller', values, io.env);
  if (server === undefined || token === undefined) {
    await write(io.stderr, missingEndpointMessage(server === undefined ? 'server' : 'token', io.env));
    return ExitCode.USAGE;
  }
  const unsendable = unsendableTokenMessage(token);
  if (unsendable !== undefined) {
    await write(io.stderr, unsendable);
    return ExitCode.USAGE;
  }
  let url: URL;
  try {
    url = new URL('/status/snapshot', mcpUrl(server));
  } catch (error) {
    return usageError(io, `--server ${(error as Error).message}`);
  }
  const print = async (): Promise<void> => {
    const answer = await fetchSnapshot(url, token, timeoutMs);
    const text = values.json ? `${JSON.stringify(answer, null, 2)}\n` : statusText(answer);
    const clear = values.watch && !values.json && (io.stdout as { isTTY?: boolean }).isTTY === true ? '\x1b[2J\x1b[H' : '';
    await write(io.stdout, clear + text);
  };
  try {
    if (!values.watch) {
      await print();
      return ExitCode.OK;
    }
    const stop = waitForSignal(io.signals);
    try {
      for (;;) {
        await print();
        let timer: NodeJS.Timeout | undefined;
        const tick = new Promise<'tick'>((resolve) => (timer = setTimeout(() => resolve('tick'), intervalMs)));
        const outcome = await Promise.race([tick, stop.signal]);
        clearTimeout(timer);
        if (outcome !== 'tick') return ExitCode.OK;
      }
    } finally {
      stop.dispose();
    }
  } catch (error) {
    if (error instanceof StatusFailure) {
      await write(io.stderr, `toolwire: ${error.message}\n`);
      return error.code;
    }
    await write(io.stderr, `toolwire: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitCode.SOFTWARE;
  }
}

async function usageError(io: CliIO, problem: string): Promise<number> {
  await write(io.stderr, misuse('status', problem, statusUsage));
  return ExitCode.USAGE;
}
