/**
 * How toolwire's tools and results look through the MCP door.
 *
 * `tools/list`: every tool the caller's grant admits, `{name, description?, inputSchema}` as the
 * host advertised it, plus {@link OUTPUT_SCHEMA}.
 *
 * `tools/call` result (`CallToolResult`):
 * - completed: `content: [{type: 'text', text: <envelope>}]`, `isError: exitCode !== 0`,
 *   `structuredContent: {stdout, stderr, exitCode, stdoutEncoding?, stderrEncoding?}` — the whole
 *   capture for programs (e.g. `toolwire call`), bounded only by the host's capture cap (default
 *   8 MiB per stream), as UTF-8 text, or base64 with `*Encoding: "base64"` when not valid UTF-8
 *   (protocol `toWire`). The model reads the text content: the envelope of the bounded projection;
 * - declined by the grant gate: `isError: true`, text `toolwire: <reason>`,
 *   `structuredContent: {declined: true, reason}`;
 * - refused by tool control: `isError: true`, text `toolwire: <reason>`,
 *   `structuredContent: {refused: true, reason}`.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { toWire } from '@toolwire/protocol';
import type { ExecuteResult } from '../executor/executor.js';
import type { InjectedTool } from '../seam.js';

const stream = (which: string) => ({
  type: 'string',
  description: `${which} of the capture, whole (host cap 8 MiB by default); UTF-8 text, or base64 when ${which}Encoding is "base64"`,
});

/** The `outputSchema` every tool declares: one of the three `structuredContent` shapes above. */
export const OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    stdout: stream('stdout'),
    stderr: stream('stderr'),
    exitCode: { type: 'integer', description: "0 success; the tool's own code; or a toolwire code (65, 69, 70, 75, 76, 124, 126, 127, 130)" },
    stdoutEncoding: { type: 'string', enum: ['base64'] },
    stderrEncoding: { type: 'string', enum: ['base64'] },
    declined: { type: 'boolean', description: 'true when the grant gate declined the call (nothing ran)' },
    refused: { type: 'boolean', description: 'true when tool control refused the call (nothing ran)' },
    reason: { type: 'string', description: 'why the call was declined or refused' },
  },
  anyOf: [{ required: ['stdout', 'stderr', 'exitCode'] }, { required: ['declined', 'reason'] }, { required: ['refused', 'reason'] }],
  additionalProperties: false,
} as const satisfies Tool['outputSchema'];

/** Map advertised tools to MCP tool definitions. */
export function toMcpTools(tools: readonly InjectedTool[]): Tool[] {
  return tools.map((tool) => {
    const out: Tool = { name: tool.name, inputSchema: tool.inputSchema as Tool['inputSchema'], outputSchema: OUTPUT_SCHEMA };
    if (tool.description !== undefined) out.description = tool.description;
    return out;
  });
}

/** Map an executor result to the MCP `tools/call` result (shapes in the module comment). */
export function toCallToolResult(result: ExecuteResult): CallToolResult {
  if (result.outcome !== 'completed') {
    return {
      content: [{ type: 'text', text: `toolwire: ${result.reason}` }],
      isError: true,
      structuredContent: { [result.outcome]: true, reason: result.reason },
    };
  }
  const stdout = toWire(result.capture.stdout);
  const stderr = toWire(result.capture.stderr);
  const structured: Record<string, unknown> = { stdout: stdout.text, stderr: stderr.text, exitCode: result.capture.exitCode };
  if (stdout.encoding) structured.stdoutEncoding = stdout.encoding;
  if (stderr.encoding) structured.stderrEncoding = stderr.encoding;
  return {
    content: [{ type: 'text', text: result.envelope.text }],
    isError: result.envelope.isError,
    structuredContent: structured,
  };
}
