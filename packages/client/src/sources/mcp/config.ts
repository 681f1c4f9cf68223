/**
 * MCP server configuration (DESIGN §7 "MCP servers"): the `mcpServers` shape the MCP ecosystem
 * uses (`.mcp.json`, `claude_desktop_config.json`), also read as a manifest's `mcp_servers` key.
 * A stdio server is `{command, args?, env?, cwd?}`, a Streamable HTTP server `{url, headers?}`;
 * toolwire adds `include`, `exclude`, `prefix`, `startup_timeout_ms`, `max_message_bytes`,
 * `max_tools`. Keys other clients use (`type`, `disabled`, `autoApprove`…) are accepted: `disabled:
 * true` skips the server, `type` must agree with the shape, the rest are ignored. `${VAR}` and
 * `${VAR:-default}` are expanded in command, args, env values, cwd, url and header values.
 */
import { isAbsolute, resolve } from 'node:path';
import { NAME_PATTERN } from '@toolwire/protocol';
import { ManifestError } from '../../manifest/errors.js';
import { expandVars } from '../../manifest/expand.js';

/** Defaults of the per-server limits. */
export const McpDefaults = {
  /** Time a server gets to start and answer `initialize`, ms. */
  startupTimeoutMs: 30_000,
  /** Largest JSON-RPC message (one stdout line of a stdio server), bytes. 16 MiB. */
  maxMessageBytes: 16 * 1024 * 1024,
  /** Tools taken from one server (`tools/list` pages are read until this many); the rest are refused. */
  maxTools: 256,
  /** Restart backoff after the server died: first and largest delay before full jitter, ms. */
  restartBaseMs: 250,
  restartMaxMs: 30_000,
} as const;

/** One MCP server as a tool host serves it. */
export interface McpServerConfig {
  /** stdio: the program (looked up on `PATH`), run directly (no shell) in its own process group. */
  command?: string;
  /** stdio: its arguments. */
  args?: string[];
  /** stdio: extra environment variables (added to the host's environment, minus the host's credentials). */
  env?: Record<string, string>;
  /** stdio: working directory; default the host's `root`. */
  cwd?: string;
  /** Streamable HTTP: the server's URL (`http://` or `https://`). */
  url?: string;
  /** Streamable HTTP: headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** Only these tools (the server's own names). Default: all. */
  include?: string[];
  /** Not these tools (the server's own names). */
  exclude?: string[];
  /** Advertised names are `<prefix><tool>`; default `<server>_`. `""` advertises the server's names as they are. */
  prefix?: string;
  /** Time to start and answer `initialize`, ms. Default 30000. */
  startupTimeoutMs?: number;
  /** Largest JSON-RPC message from a stdio server, bytes. Default 16 MiB; over → the server is restarted. */
  maxMessageBytes?: number;
  /** Tools taken from this server at most. Default 256. */
  maxTools?: number;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function strings(value: unknown, path: string, env: NodeJS.ProcessEnv, expand: boolean): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new ManifestError(path, 'must be an array of strings');
  return value.map((v: string, i) => (expand ? expandVars(v, env, `${path}[${i}]`) : v));
}

function stringMap(value: unknown, path: string, env: NodeJS.ProcessEnv, keys?: RegExp): Record<string, string> {
  if (!isObject(value)) throw new ManifestError(path, 'must be an object of strings');
  const entries = Object.entries(value).map(([key, v]): [string, string] => {
    if (keys !== undefined && !keys.test(key)) throw new ManifestError(`${path}.${key}`, 'is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)');
    if (typeof v !== 'string') throw new ManifestError(`${path}.${key}`, 'must be a string');
    return [key, expandVars(v, env, `${path}.${key}`)];
  });
  return Object.fromEntries(entries);
}

/** The longest a timer can wait, ms (2^31 − 1). */
const MAX_TIMER_MS = 2_147_483_647;

function positive(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw new ManifestError(path, 'must be a positive integer');
  return value;
}

/**
 * Parse an `mcpServers` object (`{"<name>": {...}}`) into configs by name, in document order.
 * Names are `[A-Za-z0-9_-]{1,64}`. Disabled servers (`"disabled": true`) are left out.
 * @param path the key path of the object, for errors (`mcpServers`, `mcp_servers`)
 * @param baseDir what a relative `cwd` resolves against
 * @throws ManifestError naming the key path
 */
export function parseMcpServers(value: unknown, path: string, baseDir: string, env: NodeJS.ProcessEnv = process.env): Map<string, McpServerConfig> {
  if (!isObject(value)) throw new ManifestError(path, 'must be an object of MCP servers by name');
  const servers = new Map<string, McpServerConfig>();
  for (const [name, entry] of Object.entries(value)) {
    const at = `${path}.${name}`;
    if (!NAME_PATTERN.test(name)) throw new ManifestError(at, `has an invalid server name (must match ${NAME_PATTERN.source})`);
    if (!isObject(entry)) throw new ManifestError(at, 'must be an object {command, args?, env?} or {url, headers?}');
    if (entry.disabled === true) continue;
    servers.set(name, parseServer(entry, at, baseDir, env));
  }
  return servers;
}

function parseServer(entry: Json, at: string, baseDir: string, env: NodeJS.ProcessEnv): McpServerConfig {
  const config: McpServerConfig = {};
  const stdio = entry.command !== undefined;
  const http = entry.url !== undefined;
  if (stdio === http) throw new ManifestError(at, 'must have either "command" (a stdio server) or "url" (a Streamable HTTP server)');
  const type = entry.type ?? entry.transport;
  if (type !== undefined) {
    const fits = stdio ? type === 'stdio' : type === 'http' || type === 'streamable-http' || type === 'streamableHttp';
    if (!fits) throw new ManifestError(`${at}.type`, `${JSON.stringify(type)} is not served (stdio servers, and Streamable HTTP servers: "http")`);
  }
  if (stdio) {
    if (typeof entry.command !== 'string' || entry.command === '') throw new ManifestError(`${at}.command`, 'must be a non-empty string');
    config.command = expandVars(entry.command, env, `${at}.command`);
    if (entry.args !== undefined) config.args = strings(entry.args, `${at}.args`, env, true);
    if (entry.env !== undefined) config.env = stringMap(entry.env, `${at}.env`, env, ENV_NAME);
    if (entry.cwd !== undefined) {
      if (typeof entry.cwd !== 'string' || entry.cwd === '') throw new ManifestError(`${at}.cwd`, 'must be a non-empty string');
      const cwd = expandVars(entry.cwd, env, `${at}.cwd`);
      config.cwd = isAbsolute(cwd) ? cwd : resolve(baseDir, cwd);
    }
  } else {
    if (typeof entry.url !== 'string') throw new ManifestError(`${at}.url`, 'must be a string');
    const url = expandVars(entry.url, env, `${at}.url`);
    if (!/^https?:\/\//.test(url) || !URL.canParse(url)) throw new ManifestError(`${at}.url`, 'must be an http:// or https:// URL');
    // fetch refuses such a URL (the server could never be reached) and its error quotes it, password included, at every retry.
    const parsed = new URL(url);
    if (parsed.username !== '' || parsed.password !== '') throw new ManifestError(`${at}.url`, 'must not hold user:password@ (give credentials in "headers")');
    config.url = url;
    if (entry.headers !== undefined) config.headers = stringMap(entry.headers, `${at}.headers`, env);
  }
  if (entry.include !== undefined) config.include = strings(entry.include, `${at}.include`, env, false);
  if (entry.exclude !== undefined) config.exclude = strings(entry.exclude, `${at}.exclude`, env, false);
  if (entry.prefix !== undefined) {
    if (typeof entry.prefix !== 'string' || !/^[A-Za-z0-9_-]{0,32}$/.test(entry.prefix)) throw new ManifestError(`${at}.prefix`, 'must match [A-Za-z0-9_-]{0,32}');
    config.prefix = entry.prefix;
  }
  if (entry.startup_timeout_ms !== undefined) {
    const ms = entry.startup_timeout_ms;
    // The longest a timer waits; past it Node fires after 1 ms (TimeoutOverflowWarning), so every start would fail.
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms <= 0 || ms > MAX_TIMER_MS) {
      throw new ManifestError(`${at}.startup_timeout_ms`, `must be a positive integer (ms), at most ${MAX_TIMER_MS}`);
    }
    config.startupTimeoutMs = ms;
  }
  if (entry.max_message_bytes !== undefined) config.maxMessageBytes = positive(entry.max_message_bytes, `${at}.max_message_bytes`);
  if (entry.max_tools !== undefined) config.maxTools = positive(entry.max_tools, `${at}.max_tools`);
  return config;
}
