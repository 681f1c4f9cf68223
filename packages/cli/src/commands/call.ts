/**
 * `toolwire call` — call one tool through the server's MCP door and exit with its exit code.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pTimeout from 'p-timeout';
import { Defaults, ExitCode } from '@toolwire/protocol/constants';
import { missingEndpointMessage, resolveEndpoint, unsendableTokenMessage } from '../endpoint.js';
import { type CliIO, processIO, readAll, waitForSignal, write } from '../io.js';
import { RpcError } from '../caller/errors.js';
import { mcpFailure } from '../caller/failure.js';
import { LivePrinter, STREAM_META } from '../caller/live-output.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, type McpSession, type RpcMessage, connectMcp } from '../caller/mcp.js';
import { mcpUrl } from '../caller/url.js';
import { msProblem, parseMs, timerMs } from '../ms.js';
import { argvProblem, joinNegativeValues, misuse } from '../usage.js';
import { printResult, suggestAfterNotFound } from './call-result.js';

export { suggestTools } from './call-result.js';

export const callUsage = `usage: toolwire call NAME [INPUT_JSON | -] [options]

Call one tool (MCP tools/call). The tool's stdout and stderr bytes are written to stdout and stderr
as the tool writes them (like ssh host cmd), and the exit status is the tool's exit code.

arguments:
  NAME                  tool name as listed by "toolwire tools", e.g. alpha__read_file
  INPUT_JSON            the input, a JSON object (default {}); "-" reads it from stdin

options:
  --server URL          server URL: ws://h:p, http://h:p, http://h:p/mcp, or h:p (http:// assumed)
                        (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T             caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --timeout MS          call deadline in ms (default 120000, sent with the call: it replaces the
                        server's default deadline); past it the server ends the call with 124
  --workspace DIR       workspace passed to the tool (TOOLWIRE_WORKSPACE on the host)
  --connect-timeout MS  time allowed to connect to the server (default 10000)
  --no-stream           print the output once the call has ended, not as it arrives
  -h, --help            show this help

The answer is awaited at most the deadline + the cancel grace (2000 ms) + 5000 ms.

exit status: the capture's exit code: the tool's own, or toolwire's (65 input does not match the
schema, 69 host unavailable, 70 host failed internally, 75 overloaded, 76 host protocol violation,
124 deadline exceeded, 126 cannot execute, 127 no such tool (the nearest names are suggested),
130 stopped; see README).
This command itself exits 64 for bad usage, invalid JSON, or input larger than the server accepts;
69 when the server is unreachable, lost during the call, or gives no answer within the wait above;
70 on an unexpected failure of its own; 75 when the server refuses it for now (HTTP 429: too many
failed authentications from this address; the server's reason is printed); 77 when the token is
refused or the call declined; 130 on Ctrl-C, or when the reader of stdout goes away while the call
runs (a call that had already ended keeps its exit code).
`;

/** Time the answer may take beyond the call deadline and the cancel grace, ms (network, scheduling). */
export const RESPONSE_MARGIN_MS = 5_000;
/** Time allowed on Ctrl-C for the `notifications/cancelled` to reach the server, ms. */
const CANCEL_FLUSH_MS = 1_000;
/**
 * Once stdout's reader is gone, time allowed for the wind-down (the cancel posted, the session
 * ended, the answer the server may already have sent read), ms; past it the call is given up, 130.
 */
const WIND_DOWN_MS = 3_000;
/** What stderr says when stdout's reader went away (EPIPE). */
const STDOUT_CLOSED = 'stdout was closed (its reader went away)';
/** Time allowed for live output already received to be written before an error line, ms. */
const OUTPUT_FLUSH_MS = 1_000;
/** Largest INPUT_JSON read from stdin, bytes (the server's default maxPayload). */
const MAX_INPUT_BYTES = Defaults.maxPayload;

/** Knobs for tests: the parts of the answer wait beyond the deadline, ms. */
export interface CallCommandDeps {
  /** Default `Defaults.cancelGraceMs` (2000), the server's default cancel grace. */
  cancelGraceMs?: number;
  /** Default {@link RESPONSE_MARGIN_MS}. */
  marginMs?: number;
}

const flags = {
  server: { type: 'string' },
  token: { type: 'string' },
  timeout: { type: 'string' },
  workspace: { type: 'string' },
  'connect-timeout': { type: 'string' },
  'no-stream': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `toolwire call …`. Returns the exit status (see {@link callUsage}). The answer is awaited at most
 * `deadline + cancelGraceMs + marginMs`; past that, or when the server goes away during the call
 * (its response stream ends or breaks without the answer), the exit is 69 with
 * `toolwire: no answer … within N ms (…)` / `toolwire: lost the server …`. 124 comes only from the
 * server (the call's deadline). When the server answers 127 "no such tool", the tools it offers are
 * listed and the nearest names suggested (`read_file` → `local__read_file`).
 */
export async function callCommand(argv: string[], io: CliIO = processIO(), deps: CallCommandDeps = {}): Promise<number> {
  let values: { server?: string; token?: string; timeout?: string; workspace?: string; 'connect-timeout'?: string; 'no-stream'?: boolean; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: joinNegativeValues(argv, flags), options: flags, allowPositionals: true, strict: true }));
  } catch (error) {
    return usageError(io, argvProblem(error, flags, argv));
  }
  if (values.help) {
    await write(io.stdout, callUsage);
    return ExitCode.OK;
  }
  const [name, inputText = '{}', ...extra] = positionals;
  if (name === undefined || name.length === 0) return usageError(io, 'NAME is required');
  if (extra.length > 0) return usageError(io, `unexpected argument ${JSON.stringify(extra[0])}`);
  const deadlineMs = parseMs(values.timeout, Defaults.deadlineMs);
  if (deadlineMs === undefined) return usageError(io, msProblem('--timeout', values.timeout));
  const connectTimeoutMs = parseMs(values['connect-timeout'], DEFAULT_CONNECT_TIMEOUT_MS);
  if (connectTimeoutMs === undefined) {
    return usageError(io, msProblem('--connect-timeout', values['connect-timeout']));
  }
  let text = inputText;
  if (inputText === '-') {
    try {
      text = await readAll(io.stdin, MAX_INPUT_BYTES);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      await write(io.stderr, `toolwire: input too large: standard input is longer than ${MAX_INPUT_BYTES} bytes\n`);
      return ExitCode.USAGE;
    }
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    return usageError(io, `INPUT_JSON is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return usageError(io, 'INPUT_JSON must be a JSON object');

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
    url = mcpUrl(server);
  } catch (error) {
    return usageError(io, `--server ${(error as Error).message}`);
  }

  const controller = new AbortController();
  const stop = waitForSignal(io.signals);
  void stop.signal.then(() => controller.abort(new Error('cancelled by stop')));
  // Live output unless --no-stream: chunks are printed as they arrive (caller/live-output.ts).
  const live = values['no-stream'] ? undefined : new LivePrinter(io);
  // `toolwire call … | head`: once the reader of stdout is gone, the call is wound down (an
  // unhandled EPIPE would end the process with a stack trace and leave the call to its deadline):
  // cancelled on the server, whose answer is still read until the session ends. A call that had
  // already ended exits with its capture's exit code; one still running is stopped (130), at the
  // latest after WIND_DOWN_MS.
  let stdoutProblem: string | undefined;
  const wind = new AbortController();
  let windTimer: NodeJS.Timeout | undefined;
  let ended = false;
  const onStdoutError = (error: NodeJS.ErrnoException): void => {
    if (stdoutProblem !== undefined) return;
    stdoutProblem = error.code === 'EPIPE' ? STDOUT_CLOSED : `cannot write to stdout (${error.code ?? error.message})`;
    if (ended) return; // the call is over: no timer after it
    live?.mute(); // what the call writes from now on is not shown (nor the stop's reason line)
    wind.abort(new Error(stdoutProblem));
    windTimer = setTimeout(() => controller.abort(new Error(stdoutProblem)), WIND_DOWN_MS);
  };
  // Left in place after the call: a write's EPIPE is emitted on a later tick, after the write settled.
  io.stdout.on('error', onStdoutError);
  const graceMs = deps.cancelGraceMs ?? Defaults.cancelGraceMs;
  const marginMs = deps.marginMs ?? RESPONSE_MARGIN_MS;
  const waitMs = timerMs(deadlineMs + graceMs + marginMs);
  const bound = `the call's deadline ${deadlineMs} ms + cancel grace ${graceMs} ms + margin ${marginMs} ms`;
  const meta: Record<string, unknown> = { 'toolwire/deadlineMs': deadlineMs };
  if (values.workspace !== undefined) meta['toolwire/workspace'] = values.workspace;
  if (live !== undefined) meta[STREAM_META] = true;
  const onNotification = live && ((n: RpcMessage) => live.take(n));
  let session: McpSession | undefined;
  try {
    session = await connectMcp(url, token, { signal: controller.signal, connectTimeoutMs });
    // Arguments whose text JSON.parse would change (a repeated key, a number a double cannot hold) go
    // as written, so the server refuses the call 65 naming the path, as at its door; else the parsed value.
    const asSent = await changedByParse(text);
    const params = { name, arguments: asSent === undefined ? input : asSent.placeholder, _meta: meta };
    const result = await session.request('tools/call', params, {
      timeoutMs: waitMs,
      bound,
      signal: controller.signal,
      wind: wind.signal,
      ...(onNotification && { onNotification }),
      ...(asSent && { asSent }),
    });
    if (typeof result !== 'object' || result === null) throw new RpcError(undefined, `the server answered tools/call with ${JSON.stringify(result)}`);
    await live?.flush();
    const printed = await printResult(result as Record<string, unknown>, io, live);
    if (printed.noSuchTool && stdoutProblem === undefined) await suggestAfterNotFound(session, name, io, connectTimeoutMs);
    // The call had ended: its exit code stands. A reader that left (EPIPE) is not news; another failure is.
    if (stdoutProblem !== undefined && stdoutProblem !== STDOUT_CLOSED) await write(io.stderr, `toolwire: ${stdoutProblem}\n`);
    return printed.code;
  } catch (error) {
    // What arrived is shown before the reason (Ctrl-C included), within a bound (stdout may be stuck).
    if (live !== undefined) await pTimeout(live.flush(), { milliseconds: OUTPUT_FLUSH_MS, message: false });
    if (controller.signal.aborted || stdoutProblem !== undefined) {
      await write(io.stderr, stdoutProblem !== undefined ? `toolwire: ${stdoutProblem}; the call was stopped\n` : 'toolwire: cancelled by stop\n');
      return ExitCode.CANCELLED;
    }
    const failure = mcpFailure(error, url, session === undefined ? 'connect' : 'request');
    await write(io.stderr, failure.message);
    return failure.code;
  } finally {
    ended = true;
    clearTimeout(windTimer);
    stop.dispose();
    await session?.close(controller.signal.aborted ? CANCEL_FLUSH_MS : 0);
  }
}

/** A run of digits or an exponent that a double may not hold, or a key that `JSON.parse` makes special. */
const MAYBE_LOSSY = /__proto__|\d{16}|[eE][+-]?\d{3}/;

/**
 * Might `JSON.parse(text)` (valid JSON) hand on something other than what `text` says? Conservative
 * and cheap: `__proto__`, 16 digits in a row, a 3-digit exponent, or a key (a string followed by `:`)
 * that occurs twice anywhere. Strings are matched left to right, which in valid JSON finds each string.
 */
function mayChangeByParse(text: string): boolean {
  if (MAYBE_LOSSY.test(text)) return true;
  const keys = new Set<string>();
  for (const match of text.matchAll(/"(?:[^"\\]|\\.)*"\s*:/g)) {
    const key = JSON.parse(match[0].slice(0, match[0].lastIndexOf('"') + 1)) as string;
    if (keys.has(key)) return true;
    keys.add(key);
  }
  return false;
}

/**
 * `{placeholder, text}` when `JSON.parse(text)` (an object) would not be what `text` says (the exact
 * check of the server's door, `argumentsAsSent`, loaded only when {@link mayChangeByParse}); else `undefined`.
 */
async function changedByParse(text: string): Promise<{ placeholder: string; text: string } | undefined> {
  if (!mayChangeByParse(text)) return undefined;
  const { argumentsAsSent } = await import('@toolwire/server');
  const sent = argumentsAsSent(`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"","arguments":${text}}}`)?.get(0);
  return sent === undefined ? undefined : { placeholder: `toolwire/arguments-as-sent/${randomUUID()}`, text: sent };
}

async function usageError(io: CliIO, problem: string): Promise<number> {
  await write(io.stderr, misuse('call', problem, callUsage));
  return ExitCode.USAGE;
}
