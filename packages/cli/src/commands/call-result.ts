/**
 * What `toolwire call` makes of the door's answer (`call.ts` runs the call): the capture written to
 * stdout and stderr (what live output has not already printed) and the exit status; after a "no such
 * tool", the names to suggest.
 */
import { ExitCode } from '@toolwire/protocol/constants';
import { type CliIO, write } from '../io.js';
import type { LivePrinter } from '../caller/live-output.js';
import type { McpSession } from '../caller/mcp.js';
import { editDistance } from '../suggest.js';

interface WireCapture {
  stdout?: unknown;
  stderr?: unknown;
  exitCode?: unknown;
  stdoutEncoding?: unknown;
  stderrEncoding?: unknown;
}

function bytesOf(text: unknown, encoding: unknown): Uint8Array {
  return typeof text === 'string' && text.length > 0 ? Buffer.from(text, encoding === 'base64' ? 'base64' : 'utf8') : new Uint8Array(0);
}

/** The server's own line for a name it does not know (a capture of exit code 127 from toolwire, not from the tool). */
const NO_SUCH_TOOL = /^toolwire: no such tool /m;

/**
 * Write a `tools/call` result — only what `live` has not already printed — and return the exit
 * status and whether the server said "no such tool".
 */
export async function printResult(result: Record<string, unknown>, io: CliIO, live: LivePrinter | undefined): Promise<{ code: number; noSuchTool: boolean }> {
  // A tool of an MCP server with its own structured result: the capture is in `_meta["toolwire/capture"]`.
  const meta = result._meta as Record<string, unknown> | undefined;
  const sc = (meta?.['toolwire/capture'] ?? result.structuredContent) as WireCapture | undefined;
  if (typeof sc === 'object' && sc !== null && Number.isInteger(sc.exitCode)) {
    const stderr = bytesOf(sc.stderr, sc.stderrEncoding);
    if (live !== undefined && live.chunks > 0 && !live.complete(result)) {
      await write(io.stderr, 'toolwire: some live output did not arrive; the whole capture follows\n');
    }
    if (live === undefined || !live.complete(result)) {
      await write(io.stdout, bytesOf(sc.stdout, sc.stdoutEncoding));
      await write(io.stderr, stderr);
    }
    const code = Math.min(Math.max(sc.exitCode as number, 0), 255);
    return { code, noSuchTool: code === ExitCode.NOT_FOUND && NO_SUCH_TOOL.test(Buffer.from(stderr).toString('utf8')) };
  }
  // Declined by the grant gate or refused by tool control: no capture, only text.
  const content = Array.isArray(result.content) ? (result.content as { type?: string; text?: string }[]) : [];
  const text = content.flatMap((c) => (c.type === 'text' && typeof c.text === 'string' ? [c.text] : [])).join('\n');
  await write(io.stderr, text.length === 0 || text.endsWith('\n') ? text || 'toolwire: the call was declined\n' : `${text}\n`);
  return { code: ExitCode.NO_PERM, noSuchTool: false };
}

/** Qualifier between a host name and a tool name in a qualified tool name (`local__read_file`). */
const QUALIFIER = '__';

/**
 * Tool names to suggest for `name`, which the server does not know: the qualified names whose tool
 * part is `name` (`read_file` → `local__read_file`); else the names within 2 edits of `name`, or
 * whose tool part is. Best first, at most 5.
 */
export function suggestTools(name: string, names: readonly string[]): string[] {
  const qualified = names.filter((n) => n.endsWith(`${QUALIFIER}${name}`) && n.length > name.length + QUALIFIER.length);
  if (qualified.length > 0) return qualified.slice(0, 5);
  const scored = names
    .map((n) => {
      const bare = n.includes(QUALIFIER) ? n.slice(n.indexOf(QUALIFIER) + QUALIFIER.length) : n;
      return { n, d: Math.min(editDistance(name, n), editDistance(name, bare)) };
    })
    .filter(({ d }) => d <= Math.min(2, Math.ceil(name.length / 2) - 1))
    .sort((a, b) => a.d - b.d);
  return scored.slice(0, 5).map(({ n }) => n);
}

/** After "no such tool": list the tools on the open session and print the suggestions, if any. Never throws. */
export async function suggestAfterNotFound(session: McpSession, name: string, io: CliIO, timeoutMs: number): Promise<void> {
  try {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = (await session.request('tools/list', cursor !== undefined ? { cursor } : undefined, { timeoutMs, bound: '--connect-timeout' })) as {
        tools?: { name?: unknown }[];
        nextCursor?: unknown;
      };
      for (const tool of page?.tools ?? []) if (typeof tool?.name === 'string') names.push(tool.name);
      cursor = typeof page?.nextCursor === 'string' ? page.nextCursor : undefined;
    } while (cursor !== undefined && names.length < 100_000);
    const found = suggestTools(name, names);
    if (found.length === 1) await write(io.stderr, `toolwire: did you mean ${found[0]}?\n`);
    else if (found.length > 1) await write(io.stderr, `toolwire: did you mean one of ${found.join(', ')}?\n`);
  } catch {
    // A suggestion is a courtesy: the exit status stays the server's 127.
  }
}
