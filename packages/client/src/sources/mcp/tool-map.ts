/**
 * An MCP server's tools and results in toolwire's terms (DESIGN §7 "MCP servers"): the advertised
 * face of each tool, and the capture of a `tools/call` result.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../types.js';
import type { ToolSource } from '../source.js';
import type { McpServerConfig } from './config.js';
import type { McpTool } from './mcp-source.js';
import type { McpClientSdk } from './sdk.js';
import { type Capture, type ContentBlock, MAX_CONTENT_BLOCKS, NAME_PATTERN, type ToolAnnotations, type ToolSpec, utf8 } from '@toolwire/protocol';

const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One entry of a `tools/list` page checked against the MCP `Tool` schema (`toolSchema`, the SDK's
 * zod schema): the tool, or why it is not one — its name (or `(no name)`) and the first problem, on
 * one line. Each entry is checked on its own, so one malformed tool does not refuse the page.
 */
export function checkedTool(entry: unknown, toolSchema: McpClientSdk['ToolSchema']): Tool | { name: string; reason: string } {
  const parsed = toolSchema.safeParse(entry);
  if (parsed.success) return parsed.data;
  const raw = isObject(entry) ? entry.name : undefined;
  const name = typeof raw === 'string' ? JSON.stringify(raw.slice(0, 80)) : '(no name)';
  const issue = parsed.error.issues[0];
  const at = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.map(String).join('.')}: `;
  return { name, reason: `not a valid MCP tool (${at}${(issue?.message ?? 'invalid').replace(/\s+/g, ' ').slice(0, 200)})` };
}

/** The advertised face of MCP tool `tool` under `name`, or why it cannot be served. */
export function faceOf(name: string, tool: Tool): ToolSpec | string {
  if (!NAME_PATTERN.test(name)) return `its name ${JSON.stringify(name.slice(0, 80))} does not match ${NAME_PATTERN.source}`;
  const schema = tool.inputSchema as unknown;
  if (!isObject(schema) || schema.type !== 'object') return 'its inputSchema is not an object schema';
  const spec: ToolSpec = { name, inputSchema: schema };
  const title = typeof tool.title === 'string' ? tool.title : tool.annotations?.title;
  if (typeof title === 'string') spec.title = title.slice(0, 256);
  if (typeof tool.description === 'string') spec.description = tool.description;
  if (isObject(tool.annotations)) {
    const hints: ToolAnnotations = {};
    for (const hint of HINTS) if (typeof tool.annotations[hint] === 'boolean') hints[hint] = tool.annotations[hint];
    if (Object.keys(hints).length > 0) spec.annotations = hints;
  }
  const output = tool.outputSchema as unknown;
  if (isObject(output) && output.type === 'object') spec.outputSchema = output;
  return spec;
}

/** Bytes of base64 text `data` (its decoded size). */
function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

/** The stdout line naming a non-text block: `[image image/png 1234 bytes]`, `[resource_link file:///a.txt]`. */
function blockLine(block: Record<string, unknown>): string {
  const type = String(block.type);
  const mime = typeof block.mimeType === 'string' ? ` ${block.mimeType}` : '';
  if (type === 'image' || type === 'audio') return `[${type}${mime} ${base64Bytes(block.data)} bytes]`;
  if (type === 'resource_link') return `[resource_link ${String(block.uri)}${mime}]`;
  if (type === 'resource' && isObject(block.resource)) {
    const r = block.resource;
    const rmime = typeof r.mimeType === 'string' ? ` ${r.mimeType}` : '';
    const size = typeof r.text === 'string' ? Buffer.byteLength(r.text) : base64Bytes(r.blob);
    return `[resource ${String(r.uri)}${rmime} ${size} bytes]`;
  }
  return `[${type}${mime}]`;
}

/**
 * The capture of a `tools/call` result: the text blocks joined by newlines on stdout (exit code 0),
 * or on stderr with exit code 1 when `isError`; one stdout line per non-text block naming its type,
 * MIME type and size. When the result has non-text blocks, every block is kept in `content` (at
 * most {@link MAX_CONTENT_BLOCKS}); `structuredContent` is kept in `structured` when the tool
 * declares an `outputSchema` (for other tools MCP servers send it as text too).
 */
export function captureOf(result: CallToolResult, hasOutputSchema: boolean): Capture {
  const blocks = Array.isArray(result.content) ? (result.content as unknown[]).filter(isObject) : [];
  const texts: string[] = [];
  const lines: string[] = [];
  let rich = false;
  for (const block of blocks) {
    if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else {
      rich = true;
      lines.push(blockLine(block));
    }
  }
  const text = texts.join('\n');
  const isError = result.isError === true;
  const out = [isError ? '' : text, ...lines].filter((s) => s !== '').join('\n');
  const capture: Capture = { stdout: utf8(out), stderr: utf8(isError ? text : ''), exitCode: isError ? 1 : 0 };
  if (rich) capture.content = blocks.slice(0, MAX_CONTENT_BLOCKS) as ContentBlock[];
  if (hasOutputSchema && isObject(result.structuredContent)) {
    capture.structured = result.structuredContent;
    capture.content ??= blocks.slice(0, MAX_CONTENT_BLOCKS) as ContentBlock[];
  }
  return capture;
}

/** The tools of `listed` that `config` serves (include, exclude, first of a repeated name), named `<prefix><tool>`; the rest are logged. */
export function selectTools(
  listed: readonly Tool[],
  { name, config, logger }: { name: string; config: McpServerConfig; logger: Logger },
  source: ToolSource,
): McpTool[] {
  const prefix = config.prefix ?? `${name}_`;
  const include = config.include === undefined ? undefined : new Set(config.include);
  const exclude = new Set(config.exclude ?? []);
  const tools: McpTool[] = [];
  const seen = new Set<string>();
  for (const tool of listed) {
    if (typeof tool.name !== 'string' || (include !== undefined && !include.has(tool.name)) || exclude.has(tool.name) || seen.has(tool.name)) continue;
    seen.add(tool.name);
    const face = faceOf(`${prefix}${tool.name}`, tool);
    if (typeof face === 'string') {
      logger.warn(
        { server: name, tool: tool.name.slice(0, 80) },
        `toolwire: MCP server ${name}: tool ${JSON.stringify(tool.name.slice(0, 80))} not served: ${face}`,
      );
      continue;
    }
    tools.push({ name: face.name, spec: face, source, remote: tool.name, hasOutputSchema: face.outputSchema !== undefined });
  }
  return tools;
}
