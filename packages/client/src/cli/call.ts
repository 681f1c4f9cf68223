/**
 * `toolwire call` — call one tool through the server's MCP door and exit with its exit code.
 */
import { parseArgs } from 'node:util';
import { Defaults, ExitCode, fromWire } from '@toolwire/protocol';
import { missingEndpointMessage, resolveEndpoint } from './endpoint.js';
import { type CliIO, processIO, readAll, waitForSignal, write } from './io.js';
import { type McpSession, connectMcp, mcpFailure, mcpUrl } from './mcp.js';

export const callUsage = `usage: toolwire call NAME [INPUT_JSON | -] [--server URL] [--token T] [--timeout MS] [--workspace DIR]

Call one tool (MCP tools/call). The tool's stdout and stderr bytes are written to stdout and stderr,
and the exit status is the tool's exit code.

arguments:
  NAME             tool name as listed by "toolwire tools", e.g. alpha__read_file
  INPUT_JSON       the input, a JSON object (default {}); "-" reads it from stdin

options:
  --server URL     server URL: ws://h:p, http://h:p or http://h:p/mcp
                   (default: $TOOLWIRE_SERVER, then the local credentials file)
  --token T        caller token (default: $TOOLWIRE_TOKEN, then the local credentials file)
  --timeout MS     call deadline in ms (default 120000); past it the call ends with 124
  --workspace DIR  workspace passed to the tool (TOOLWIRE_WORKSPACE on the host)
  -h, --help       show this help

exit status: the tool's exit code (124 deadline, 127 no such tool, 130 Ctrl-C, … see README);
64 bad usage or invalid JSON, 69 server unreachable, 77 token refused or call declined.
`;

/** Time the MCP request may take beyond the call deadline before the client gives up, ms. */
export const REQUEST_MARGIN_MS = Defaults.cancelGraceMs + 8_000;
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

/** `toolwire call …`. Returns the exit status (see {@link callUsage}). */
export async function callCommand(argv: string[], io: CliIO = processIO()): Promise<number> {
  let values: { server?: string; token?: string; timeout?: string; workspace?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: {
        server: { type: 'string' },
        token: { type: 'string' },
        timeout: { type: 'string' },
        workspace: { type: 'string' },
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
  let deadlineMs: number = Defaults.deadlineMs;
  if (values.timeout !== undefined) {
    deadlineMs = Number(values.timeout);
    if (!/^\d+$/.test(values.timeout) || !Number.isSafeInteger(deadlineMs) || deadlineMs <= 0) {
      return usageError(io, `--timeout must be a positive integer (ms), got ${JSON.stringify(values.timeout)}`);
    }
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
  const timeout = deadlineMs + REQUEST_MARGIN_MS;
  const meta: Record<string, unknown> = { 'toolwire/deadlineMs': deadlineMs };
  if (values.workspace !== undefined) meta['toolwire/workspace'] = values.workspace;
  let session: McpSession | undefined;
  try {
    session = await connectMcp(url, token, controller.signal);
    const result = await session.client.callTool(
      { name, arguments: input as Record<string, unknown>, _meta: meta },
      undefined,
      { signal: controller.signal, timeout },
    );
    return await printResult(result as Record<string, unknown>, io);
  } catch (error) {
    if (controller.signal.aborted) {
      await write(io.stderr, 'toolwire: cancelled by stop\n');
      return ExitCode.CANCELLED;
    }
    const failure = mcpFailure(error, url, timeout);
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
