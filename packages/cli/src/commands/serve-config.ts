/**
 * The `toolwire serve` config file (JSON) and the `--listen` value.
 *
 * ```json
 * {
 *   "listen": "127.0.0.1:7700",
 *   "hosts":   [{ "name": "build-box", "token": "…" }],
 *   "callers": [{ "name": "agent-1", "token": "…", "grant": ["build-box__make"] }],
 *   "recordDir": "records",
 *   "writeCredentials": false,
 *   "heartbeatMs": 10000, "deadlineMs": 120000, "cancelGraceMs": 2000, "maxPayload": 16777216,
 *   "naming": "qualified"
 * }
 * ```
 * `hosts` and `callers` are required (they may be empty). Each credential gives its token either
 * inline (`"token": "…"`) or as the name of an environment variable holding it
 * (`"tokenEnv": "LAPTOP_TOKEN"`; read when the file is loaded or reloaded; unset or empty → error).
 * Every other key is optional: `listen` (default `127.0.0.1:7700`; `--listen` wins),
 * `writeCredentials` (default false: write the local credentials file for the first host and first
 * caller), `recordDir`, `tlsCert` and `tlsKey` (PEM files, both or neither; `--tls-cert`/`--tls-key`
 * win) — paths relative to the config file's directory — and every limit of `ServerOptions`
 * (DESIGN §8, README "Security") plus `mcpMaxSessions`, `mcpMaxSessionsPerCaller`, `mcpMaxListensPerCaller`, `mcpMaxInputDepth`, `mcpSessionIdleMs` and
 * `mcpMaxRequestBodyBytes`. Unknown keys
 * are rejected. The file is at most 1 MiB.
 *
 * `cluster` joins a cluster of server nodes over NATS (DESIGN §10): `{"nats": ["nats://…"], "name",
 * "node", "heartbeatMs", "requestTimeoutMs", "credentials": {"token" | "tokenEnv" | "user" + "pass"
 * | "passEnv" | "credsFile"}, "tls": {"ca", "cert", "key"}}` (paths relative to the config file).
 */
import { createReadStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { ConfigError } from './listen.js';
import { formatAjvErrors } from '@toolwire/protocol';
import type { CallerCredential, HostCredential, ToolwireServerOptions } from '@toolwire/server';

/** Largest config file read, bytes. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** A parsed, checked config file. */
export interface ServeConfig {
  listen?: string;
  hosts: HostCredential[];
  callers: CallerCredential[];
  writeCredentials: boolean;
  /** TLS certificate and key files (absolute paths), when the config names them. */
  tls?: { certFile: string; keyFile: string };
  /** The remaining keys, ready for `new ToolwireServer(...)` (`recordDir` made absolute). */
  options: Omit<ToolwireServerOptions, 'hosts' | 'callers' | 'logger' | 'toolControl' | 'fallback'>;
}

const count = { type: 'integer', minimum: 1 } as const;
const zeroOk = { type: 'integer', minimum: 0 } as const;
const text = { type: 'string', minLength: 1 } as const;
const envName = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } as const;

const configSchema = {
  type: 'object',
  properties: {
    listen: text,
    hosts: {
      type: 'array',
      items: { type: 'object', properties: { name: text, token: text, tokenEnv: envName }, required: ['name'], additionalProperties: false },
    },
    callers: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: text, token: text, tokenEnv: envName, grant: { type: 'array', items: text } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    writeCredentials: { type: 'boolean' },
    recordDir: text,
    tlsCert: text,
    tlsKey: text,
    naming: { enum: ['qualified', 'bare'] },
    loopbackDev: { type: 'boolean' },
    maxPayload: count,
    heartbeatMs: count,
    deadlineMs: count,
    cancelGraceMs: zeroOk,
    maxToolsPerHost: count,
    maxSchemaBytes: count,
    maxSchemaDepth: count,
    maxInFlightPerHost: count,
    maxBufferedBytesPerHost: count,
    helloTimeoutMs: count,
    maxBadFrames: count,
    projectionHeadBytes: zeroOk,
    projectionTailBytes: zeroOk,
    mcpMaxSessions: count,
    mcpMaxSessionsPerCaller: count,
    mcpMaxListensPerCaller: count,
    mcpMaxInputDepth: count,
    mcpSessionIdleMs: count,
    mcpMaxRequestBodyBytes: count,
    maxDescriptionChars: count,
    maxConnections: count,
    maxConnectionsPerHost: count,
    allowedOrigins: { type: 'array', items: text },
    allowedHosts: { type: 'array', items: text },
    perMessageDeflate: { type: 'boolean' },
    authMaxFailures: count,
    authFailureWindowMs: count,
    authBlockMs: count,
    authMaxTrackedAddresses: count,
    maxPreAuthConnections: count,
    maxPreAuthPerAddress: count,
    preAuthTimeoutMs: count,
    headersTimeoutMs: count,
    requestTimeoutMs: count,
    keepAliveTimeoutMs: count,
    maxHeaderBytes: count,
    maxHeadersCount: count,
    progressIntervalMs: count,
    outputWindowBytes: count,
    outputChunkBytes: count,
    maxCaptureBytes: zeroOk,
    maxRecordLogBytes: count,
    schemaCompileBudgetMs: count,
    schemaCompileWindowMs: count,
    maxSchemaCodeBytes: count,
    frameDecodeTimeoutMs: count,
    advertiseCacheBytes: zeroOk,
    maxLogLinesPerHost: count,
    logWindowMs: count,
    statusRecentCalls: count,
    statusMaxViewers: count,
    statusSessionMs: count,
    statusMaxSessions: count,
    cluster: {
      type: 'object',
      properties: {
        nats: { type: 'array', items: text, minItems: 1 },
        name: text,
        node: text,
        heartbeatMs: count,
        requestTimeoutMs: count,
        kvReplicas: count,
        claimMs: count,
        credentials: {
          type: 'object',
          properties: { token: text, tokenEnv: envName, user: text, pass: text, passEnv: envName, credsFile: text },
          additionalProperties: false,
        },
        tls: { type: 'object', properties: { ca: text, cert: text, key: text }, additionalProperties: false },
      },
      required: ['nats'],
      additionalProperties: false,
    },
  },
  required: ['hosts', 'callers'],
  additionalProperties: false,
} as const;

const validate = new Ajv({ strict: true, allErrors: true }).compile(configSchema);

/** One line per problem; an unknown key is named, e.g. `/hosts/0: unknown key "tokn"`. */
function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) =>
      e.keyword === 'additionalProperties'
        ? `${e.instancePath || '/'}: unknown key ${JSON.stringify((e.params as { additionalProperty: string }).additionalProperty)}`
        : formatAjvErrors([e]),
    )
    .join('; ');
}

/** A credential as written in the file: the token inline or in an environment variable. */
type RawCredential = { name: string; token?: string; tokenEnv?: string; grant?: string[] };

/** Resolve `token` / `tokenEnv` of each credential; the message names the entry, never a token. */
function resolveTokens<T extends RawCredential>(list: T[], where: string, env: NodeJS.ProcessEnv, path: string): (Omit<T, 'tokenEnv'> & { token: string })[] {
  return list.map((cred, i) => {
    const { tokenEnv, ...rest } = cred;
    if ((cred.token === undefined) === (tokenEnv === undefined)) {
      throw new ConfigError(`config ${path}: /${where}/${i}: give exactly one of "token" and "tokenEnv"`);
    }
    if (tokenEnv === undefined) return rest as Omit<T, 'tokenEnv'> & { token: string };
    const token = env[tokenEnv];
    if (token === undefined || token === '') {
      throw new ConfigError(`config ${path}: /${where}/${i}: environment variable ${tokenEnv} (tokenEnv) is not set or empty`);
    }
    return { ...rest, token };
  });
}

/**
 * The text of the config file at `path`, reading at most {@link MAX_CONFIG_BYTES} + 1 bytes: a file
 * over the limit, or one that never ends (`/dev/zero`, a pipe), is refused before it fills memory.
 */
async function readConfigText(path: string): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  // `end` is inclusive: one byte past the limit tells "over the limit" from "exactly at it".
  for await (const chunk of createReadStream(path, { start: 0, end: MAX_CONFIG_BYTES })) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
  }
  if (length > MAX_CONFIG_BYTES) throw new ConfigError(`config ${path}: larger than ${MAX_CONFIG_BYTES} bytes`);
  return Buffer.concat(chunks, length).toString('utf8');
}

/**
 * Read and check the config file at `path`.
 * @param env where `tokenEnv` variables are read; default `process.env`
 * @throws ConfigError when it cannot be read, is over {@link MAX_CONFIG_BYTES}, is not JSON, does
 *   not match the shape, or names an unset `tokenEnv` (the message names the file and the problems)
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<ServeConfig> {
  let raw: string;
  try {
    raw = await readConfigText(path);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`config ${path}: cannot read: ${error instanceof Error ? error.message : String(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new ConfigError(`config ${path}: not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!validate(value)) throw new ConfigError(`config ${path}: ${describe(validate.errors)}`);
  const { listen, hosts, callers, writeCredentials, recordDir, tlsCert, tlsKey, ...options } = value as Record<string, unknown> & {
    listen?: string;
    hosts: RawCredential[];
    callers: RawCredential[];
    writeCredentials?: boolean;
    recordDir?: string;
    tlsCert?: string;
    tlsKey?: string;
  };
  const config: ServeConfig = {
    hosts: resolveTokens(hosts, 'hosts', env, path),
    callers: resolveTokens(callers, 'callers', env, path),
    writeCredentials: writeCredentials ?? false,
    options,
  };
  if (listen !== undefined) config.listen = listen;
  if (options.cluster !== undefined) config.options.cluster = resolveCluster(options.cluster as RawCluster, env, path);
  if (recordDir !== undefined) config.options.recordDir = resolve(dirname(path), recordDir);
  if ((tlsCert === undefined) !== (tlsKey === undefined)) throw new ConfigError(`config ${path}: give both "tlsCert" and "tlsKey", or neither`);
  if (tlsCert !== undefined && tlsKey !== undefined) {
    config.tls = { certFile: resolve(dirname(path), tlsCert), keyFile: resolve(dirname(path), tlsKey) };
  }
  return config;
}

interface RawCluster {
  nats: string[];
  credentials?: { token?: string; tokenEnv?: string; user?: string; pass?: string; passEnv?: string; credsFile?: string };
  tls?: { ca?: string; cert?: string; key?: string };
  [key: string]: unknown;
}

/** The `cluster` key: secrets from the environment when named so, file paths relative to the config file. */
function resolveCluster(raw: RawCluster, env: NodeJS.ProcessEnv, path: string): NonNullable<ToolwireServerOptions['cluster']> {
  const { credentials, tls, ...rest } = raw;
  const fromEnv = (name: string): string => {
    const value = env[name];
    if (value === undefined || value === '') throw new ConfigError(`config ${path}: cluster credentials: environment variable ${name} is unset or empty`);
    return value;
  };
  const at = (file: string): string => resolve(dirname(path), file);
  const cluster: NonNullable<ToolwireServerOptions['cluster']> = { ...(rest as { nats: string[] }) };
  if (credentials !== undefined) {
    const { tokenEnv, passEnv, credsFile, ...inline } = credentials;
    cluster.credentials = {
      ...inline,
      ...(tokenEnv !== undefined && { token: fromEnv(tokenEnv) }),
      ...(passEnv !== undefined && { pass: fromEnv(passEnv) }),
      ...(credsFile !== undefined && { credsFile: at(credsFile) }),
    };
  }
  if (tls !== undefined) cluster.tls = { ...(tls.ca && { ca: at(tls.ca) }), ...(tls.cert && { cert: at(tls.cert) }), ...(tls.key && { key: at(tls.key) }) };
  return cluster;
}

export { ConfigError, DEFAULT_LISTEN, parseListen } from './listen.js';
