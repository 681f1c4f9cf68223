/**
 * How toolwire's tools and results look through the MCP door.
 *
 * `tools/list`: every tool the caller's grant admits, `{name, title?, description?, inputSchema,
 * annotations?}` as the host advertised it, and its own `outputSchema` when it has one (a tool of an
 * MCP server), else {@link OUTPUT_SCHEMA}.
 *
 * `tools/call` result (`CallToolResult`):
 * - completed: `content: [{type: 'text', text: <envelope>}]`, `isError: exitCode !== 0`,
 *   `structuredContent: {stdout, stderr, exitCode, stdoutEncoding?, stderrEncoding?}` — the whole
 *   capture for programs (e.g. `toolwire call`), bounded only by the host's capture cap (default
 *   8 MiB per stream), as UTF-8 text, or base64 with `*Encoding: "base64"` when not valid UTF-8
 *   (protocol `toWire`). The model reads the text content: the envelope of the bounded projection;
 * - completed by a tool of an MCP server (the capture carries `content` or `structured`): that
 *   server's content blocks and `structuredContent`, unchanged (text envelope when it sent no blocks),
 *   with the capture in `_meta["toolwire/capture"]` when `structuredContent` is the tool's own;
 * - failed (or declined, refused) for a tool with its own `outputSchema` and no structured result of
 *   its own: no `structuredContent` (the capture, if any, in `_meta["toolwire/capture"]`);
 * - declined by the grant gate: `isError: true`, text `toolwire: <reason>`,
 *   `structuredContent: {declined: true, reason}`;
 * - refused by tool control: `isError: true`, text `toolwire: <reason>`,
 *   `structuredContent: {refused: true, reason}`.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { toWire } from '@toolwire/protocol';
import type { ExecuteResult } from '../executor/request.js';
import type { InjectedTool } from '../seam.js';
import type { ToolSource } from './caller.js';

const stream = (which: string) => ({
  type: 'string',
  description: `${which} of the capture, whole (host cap 8 MiB by default); UTF-8 text, or base64 when ${which}Encoding is "base64"`,
});

/**
 * `_meta` key of a result whose `structuredContent` is a tool's own (a tool of an MCP server with an
 * `outputSchema`): the capture `{stdout, stderr, exitCode, …}` that `structuredContent` holds otherwise.
 */
export const CAPTURE_META = 'toolwire/capture';

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
  // Sorted by name: the same tools are listed in the same order whatever order their hosts connected in.
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((tool) => {
    const outputSchema = (tool.outputSchema ?? OUTPUT_SCHEMA) as Tool['outputSchema'];
    const out: Tool = { name: tool.name, inputSchema: tool.inputSchema as Tool['inputSchema'], outputSchema };
    if (tool.title !== undefined) out.title = tool.title;
    if (tool.description !== undefined) out.description = tool.description;
    if (tool.annotations !== undefined) out.annotations = { ...tool.annotations };
    return out;
  });
}

/** Whether the tool listed as `name` has its own `outputSchema` (a tool of an MCP server that declares one). */
export function ownsOutputSchema(tools: ToolSource, name: string): boolean {
  return tools.tools().some((t) => t.name === name && t.outputSchema !== undefined);
}

/**
 * Map an executor result to the MCP `tools/call` result (shapes in the module comment).
 * `ownOutputSchema` (asked only for a failed call without a structured result of the tool's own)
 * tells whether the tool is listed with its own `outputSchema`: such a failure then carries no
 * `structuredContent` (clients check it against that schema, which the capture does not fit, and
 * would show a schema error instead of the failure), the capture being in `_meta["toolwire/capture"]`.
 */
export function toCallToolResult(result: ExecuteResult, ownOutputSchema: () => boolean = () => false): CallToolResult {
  if (result.outcome !== 'completed') {
    const text: CallToolResult['content'] = [{ type: 'text', text: `toolwire: ${result.reason}` }];
    if (ownOutputSchema()) return { content: text, isError: true };
    return { content: text, isError: true, structuredContent: { [result.outcome]: true, reason: result.reason } };
  }
  const stdout = toWire(result.capture.stdout);
  const stderr = toWire(result.capture.stderr);
  const structured: Record<string, unknown> = { stdout: stdout.text, stderr: stderr.text, exitCode: result.capture.exitCode };
  if (stdout.encoding) structured.stdoutEncoding = stdout.encoding;
  if (stderr.encoding) structured.stderrEncoding = stderr.encoding;
  const { content, structured: own } = result.capture;
  if (own === undefined && result.envelope.isError && ownOutputSchema()) {
    const blocks = content ?? [{ type: 'text', text: result.envelope.text }];
    return { content: blocks as CallToolResult['content'], isError: true, _meta: { [CAPTURE_META]: structured } };
  }
  if (content !== undefined || own !== undefined) {
    // A tool of an MCP server: its own blocks and structured result, unchanged (the capture's
    // structure when it sent none: the tool is then listed with OUTPUT_SCHEMA).
    const blocks = content ?? [{ type: 'text', text: result.envelope.text }];
    const out: CallToolResult = { content: blocks as CallToolResult['content'], isError: result.envelope.isError, structuredContent: own ?? structured };
    if (own !== undefined) out._meta = { [CAPTURE_META]: structured }; // programs (toolwire call) still get the capture
    return out;
  }
  return {
    content: [{ type: 'text', text: result.envelope.text }],
    isError: result.envelope.isError,
    structuredContent: structured,
  };
}
