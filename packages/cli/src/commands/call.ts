/**
 * `toolwire call` — call one tool through the server's MCP door and exit with its exit code.
 */
import { parseArgs } from 'node:util';
import { Defaults, ExitCode, fromWire } from '@toolwire/protocol';
import { missingEndpointMessage, resolveEndpoint } from '../endpoint.js';
import { type CliIO, processIO, readAll, waitForSignal, write } from '../io.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, type McpSession, boundedRequest, connectMcp, mcpFailure, mcpUrl } from '../caller/mcp.js';
import { parseMs } from '../ms.js';

export const callUsage = `usage: toolwire call NAME [INPUT_JSON | -] [--server URL] [--token T] [--timeout MS] [--workspace DIR] [--connect-timeout MS]

Call one tool (MCP tools/call). The tool's stdout and stderr bytes are written to stdout and stderr,
and the exit status is the tool's exit code.

arguments:
  NAME                  tool name as listed by "toolwire tools", e.g. alpha__read_file
  INPUT_JSON            the input, a JSON object (default {}); "-" reads it from stdin

options:
  --server URL          server URL: ws://h:p, http://h:p, http://h:p/mcp, or h:p (http:// assumed)
                        (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T             caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --timeout MS          call deadline in ms (default 120000); past it the server ends the call with 124
  --workspace DIR       workspace passed to the tool (TOOLWIRE_WORKSPACE on the host)
  --connect-timeout MS  time allowed to connect to the server (default 10000)
  -h, --help            show this help

The answer is awaited at most the deadline + the cancel grace (2000 ms) + 5000 ms.

exit status: the capture's exit code: the tool's own, or toolwire's (65 input does not match the
schema, 69 host unavailable, 70 host failed internally, 75 overloaded, 76 host protocol violation,
124 deadline exceeded, 126 cannot execute, 127 no such tool, 130 stopped; see README).
This command itself exits 64 for bad usage, invalid JSON, or input larger than the server accepts;
69 when the server is unreachable, lost during the call, or gives no answer within the wait above;
70 on an unexpected failure of its own; 77 when the token is refused or the call declined;
130 on Ctrl-C.
`;

/** Time the answer may take beyond the call deadline and the cancel grace, ms (network, scheduling). */
export const RESPONSE_MARGIN_MS = 5_000;
/** Time the MCP request may take beyond the call deadline before the client gives up, ms. */
export const REQUEST_MARGIN_MS = Defaults.cancelGraceMs + RESPONSE_MARGIN_MS;
/** Time allowed on Ctrl-C for the `notifications/cancelled` to reach the server, ms. */
const CANCEL_FLUSH_MS = 1_000;
/** Largest INPUT_JSON read from stdin, bytes (the server's default maxPayload). */
const MAX_INPUT_BYTES = Defaults.maxPayload;

interface WireCapture {
  stdout?: unknown;
  stderr?: unknown;
  exitCode?: unknown;
  stdoutEncoding?: unknown;
  stderrEncoding?: unknown;
}

function bytesOf(text: unknown, encoding: unknown): Uint8Array {
  return typeof text === 'string' ? fromWire(text, encoding === 'base64' ? 'base64' : undefined) : new Uint8Array(0);
}

/** Write a `tools/call` result; returns the exit status. */
async function printResult(result: Record<string, unknown>, io: CliIO): Promise<number> {
  const sc = result.structuredContent as WireCapture | undefined;
  if (typeof sc === 'object' && sc !== null && Number.isInteger(sc.exitCode)) {
    await write(io.stdout, bytesOf(sc.stdout, sc.stdoutEncoding));
    await write(io.stderr, bytesOf(sc.stderr, sc.stderrEncoding));
    return Math.min(Math.max(sc.exitCode as number, 0), 255);
  }
  // Declined by the grant gate or refused by tool control: no capture, only text.
  const content = Array.isArray(result.content) ? (result.content as { type?: string; text?: string }[]) : [];
  const text = content.flatMap((c) => (c.type === 'text' && typeof c.text === 'string' ? [c.text] : [])).join('\n');
  await write(io.stderr, text.length === 0 || text.endsWith('\n') ? text || 'toolwire: the call was declined\n' : `${text}\n`);
  return ExitCode.NO_PERM;
}

/** Knobs for tests: the parts of the answer wait beyond the deadline, ms. */
export interface CallCommandDeps {
  /** Default `Defaults.cancelGraceMs` (2000), the server's default cancel grace. */
  cancelGraceMs?: number;
  /** Default {@link RESPONSE_MARGIN_MS}. */
  marginMs?: number;
}

/**
 * `toolwire call …`. Returns the exit status (see {@link callUsage}). The answer is awaited at most
 * `deadline + cancelGraceMs + marginMs`; past that, or when the server goes away during the call
 * (its response stream ends or breaks without the answer), the exit is 69 with
 * `toolwire: no answer … within N ms (…)` / `toolwire: lost the server …`. 124 comes only from the
 * server (the call's deadline).
 */
export async function callCommand(argv: string[], io: CliIO = processIO(), deps: CallCommandDeps = {}): Promise<number> {
  let values: { server?: string; token?: string; timeout?: string; workspace?: string; 'connect-timeout'?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: {
        server: { type: 'string' },
        token: { type: 'string' },
        timeout: { type: 'string' },
        workspace: { type: 'string' },
        'connect-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    return usageError(io, (error as Error).message);
  }
  if (values.help) {
    await write(io.stdout, callUsage);
    return ExitCode.OK;
  }
  const [name, inputText = '{}', ...extra] = positionals;
  if (name === undefined || name.length === 0) return usageError(io, 'NAME is required');
  if (extra.length > 0) return usageError(io, `unexpected argument ${JSON.stringify(extra[0])}`);
  const deadlineMs = parseMs(values.timeout, Defaults.deadlineMs);
  if (deadlineMs === undefined) return usageError(io, `--timeout must be a positive integer (ms), got ${JSON.stringify(values.timeout)}`);
  const connectTimeoutMs = parseMs(values['connect-timeout'], DEFAULT_CONNECT_TIMEOUT_MS);
  if (connectTimeoutMs === undefined) {
    return usageError(io, `--connect-timeout must be a positive integer (ms), got ${JSON.stringify(values['connect-timeout'])}`);
  }
  let input: unknown;
  try {
    input = JSON.parse(inputText === '-' ? await readAll(io.stdin, MAX_INPUT_BYTES) : inputText);
  } catch (error) {
    return usageError(io, `INPUT_JSON is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return usageError(io, 'INPUT_JSON must be a JSON object');

  const { server, token } = await resolveEndpoint('caller', values, io.env);
  if (server === undefined || token === undefined) {
    await write(io.stderr, missingEndpointMessage(server === undefined ? 'server' : 'token', io.env));
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
  const graceMs = deps.cancelGraceMs ?? Defaults.cancelGraceMs;
  const marginMs = deps.marginMs ?? RESPONSE_MARGIN_MS;
  const waitMs = deadlineMs + graceMs + marginMs;
  const bound = `the call's deadline ${deadlineMs} ms + cancel grace ${graceMs} ms + margin ${marginMs} ms`;
  const meta: Record<string, unknown> = { 'toolwire/deadlineMs': deadlineMs };
  if (values.workspace !== undefined) meta['toolwire/workspace'] = values.workspace;
  let session: McpSession | undefined;
  try {
    session = await connectMcp(url, token, { signal: controller.signal, connectTimeoutMs });
    const open = session;
    const result = await boundedRequest(
      open,
      waitMs,
      bound,
      (signal) => open.client.callTool({ name, arguments: input as Record<string, unknown>, _meta: meta }, undefined, { signal, timeout: waitMs }),
      controller.signal,
    );
    return await printResult(result, io);
  } catch (error) {
    if (controller.signal.aborted) {
      await write(io.stderr, 'toolwire: cancelled by stop\n');
      return ExitCode.CANCELLED;
    }
    const failure = mcpFailure(error, url, session === undefined ? 'connect' : 'request');
    await write(io.stderr, failure.message);
    return failure.code;
  } finally {
    stop.dispose();
    await session?.close(controller.signal.aborted ? CANCEL_FLUSH_MS : 0);
  }
}

async function usageError(io: CliIO, message: string): Promise<number> {
  await write(io.stderr, `toolwire call: ${message}\n\n${callUsage}`);
  return ExitCode.USAGE;
}
