/** Reading MCP server configuration from a file (DESIGN §7 "MCP servers"). */
import { dirname, resolve } from 'node:path';
import type { CommandToolSpec } from '../../types.js';
import { ManifestError } from '../../manifest/errors.js';
import { MAX_MANIFEST_BYTES, readDocument, readManifestText, toolsOf } from '../../manifest/load.js';
import { readBounded } from '../../manifest/read-bounded.js';
import { findRepeatedKey } from '../../manifest/repeated-key.js';
import { type McpServerConfig, parseMcpServers } from './config.js';

/**
 * Read the MCP servers of a JSON file: its `mcpServers` object (`.mcp.json`,
 * `claude_desktop_config.json`, read unchanged — other top-level keys are ignored) or its
 * `mcp_servers` object (a toolwire manifest). See {@link parseMcpServers} for an entry's shape.
 * `${TOOLWIRE_MANIFEST_DIR}` expands to the file's absolute directory; relative `cwd`s resolve there.
 *
 * @param optional a file without either key gives no servers (otherwise: an error)
 * @returns servers by name, in document order (disabled ones left out)
 * @throws ManifestError (unreadable, not JSON, larger than 4 MiB, a key repeated in one object, or invalid) with a message starting `manifest <path>: `
 */
export async function loadMcpConfig(path: string, env: NodeJS.ProcessEnv = process.env, optional = false): Promise<Map<string, McpServerConfig>> {
  const file = resolve(path);
  let value: unknown;
  let text: string;
  try {
    const bytes = await readBounded(file, MAX_MANIFEST_BYTES);
    text = bytes.toString('utf8');
    value = JSON.parse(text);
  } catch (error) {
    throw new ManifestError('', `cannot read an MCP config: ${(error as Error).message}`, path);
  }
  const repeated = findRepeatedKey(text);
  if (repeated !== undefined) throw new ManifestError(repeated.path, `is given twice in one object (line ${repeated.line}): JSON keeps only the last`, path);
  return serversOf(value, file, path, env, optional);
}

/**
 * The command tools and the MCP servers (`mcp_servers` or `mcpServers`, may be absent) of one
 * manifest file, read once: what `loadManifest(path, env)` and `loadMcpConfig(path, env, true)` give,
 * for a file that can be read only once (a pipe: `--manifest <(cat tools.json)`, `/dev/stdin`).
 *
 * @param env variables for `${VAR}` expansion; default `process.env` (plus `TOOLWIRE_MANIFEST_DIR`)
 * @throws ManifestError as `loadManifest` does, and for an invalid server entry
 */
export async function loadManifestAndServers(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ tools: CommandToolSpec[]; servers: Map<string, McpServerConfig> }> {
  const file = resolve(path);
  const value = readDocument(await readManifestText(file, path), path);
  const tools = toolsOf(value, file, path, env);
  return { tools, servers: serversOf(value, file, path, env, true) };
}

/** The servers of the parsed document `value` read from `file`; see {@link loadMcpConfig}. */
function serversOf(value: unknown, file: string, path: string, env: NodeJS.ProcessEnv, optional: boolean): Map<string, McpServerConfig> {
  const doc = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const key = doc.mcpServers !== undefined ? 'mcpServers' : doc.mcp_servers !== undefined ? 'mcp_servers' : undefined;
  if (doc.mcpServers !== undefined && doc.mcp_servers !== undefined) throw new ManifestError('mcp_servers', 'is given twice (mcpServers and mcp_servers)', path);
  if (key === undefined) {
    if (optional) return new Map();
    throw new ManifestError('', 'has no "mcpServers" (or "mcp_servers") object', path);
  }
  try {
    const baseDir = dirname(file);
    return parseMcpServers(doc[key], key, baseDir, { ...env, TOOLWIRE_MANIFEST_DIR: baseDir });
  } catch (error) {
    if (error instanceof ManifestError) throw new ManifestError(error.keyPath, error.problem, path);
    throw error;
  }
}
