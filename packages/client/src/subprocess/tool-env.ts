/**
 * The environment of a tool process (DESIGN §7 "Tool environment"): the host's environment (all of
 * it, or only a minimal base plus the tool's `envPassthrough`), then the tool's `env`, then the
 * `TOOLWIRE_*` call facts — never the host's own credentials.
 */
import type { CallFacts, CommandSpec } from '../types.js';

/** Variables that carry a host's credentials; removed from every tool's environment. */
export const CREDENTIAL_VARS: readonly string[] = ['TOOLWIRE_TOKEN', 'TOOLWIRE_TOKEN_FILE'];

/** What a tool gets from the host environment with `inheritEnv: false` (besides its `envPassthrough`). */
export const BASE_ENV_VARS: readonly string[] = ['PATH', 'HOME', 'LANG', 'TERM', 'USER', 'SHELL', 'TMPDIR'];

/** How a host builds its tools' environments. */
export interface EnvPolicy {
  /** `true`: the whole host environment; `false`: only {@link BASE_ENV_VARS} and the tool's `envPassthrough`. */
  inherit: boolean;
  /** Variable names never passed to a tool: {@link CREDENTIAL_VARS} plus the host's `scrubEnv`. */
  scrub: ReadonlySet<string>;
  /** The host's token: any variable whose value is this token (or it with one trailing newline) is removed too. */
  secret: string | undefined;
}

/** The policy when nothing is configured: inherit, minus {@link CREDENTIAL_VARS}. */
export const DEFAULT_ENV_POLICY: EnvPolicy = { inherit: true, scrub: new Set(CREDENTIAL_VARS), secret: undefined };

/**
 * The environment of one tool process: the host's (`base`, by `policy.inherit`) + the tool's
 * `envPassthrough` + the tool's `env` + `TOOLWIRE_CALL_ID`, `TOOLWIRE_AGENT`, `TOOLWIRE_WORKSPACE`,
 * `TOOLWIRE_DEADLINE_MS`, and `TRACEPARENT`/`TRACESTATE` when the call has trace context (else
 * none, whatever the host's environment holds). Then every name in `policy.scrub` and every variable whose value is the
 * host's token is removed, whichever layer set it (a manifest `env` of `${TOOLWIRE_TOKEN}` included).
 */
export function toolEnv(spec: CommandSpec, ctx: CallFacts, policy: EnvPolicy = DEFAULT_ENV_POLICY, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (policy.inherit) copyEnv(env, base);
  else for (const name of BASE_ENV_VARS) copyOne(env, base, name);
  if (spec.envPassthrough !== undefined) for (const name of spec.envPassthrough) copyOne(env, base, name);
  if (spec.env !== undefined) copyEnv(env, spec.env);
  dropCredentials(env, policy);
  env.TOOLWIRE_CALL_ID = ctx.id;
  env.TOOLWIRE_AGENT = ctx.agent;
  env.TOOLWIRE_WORKSPACE = ctx.workspace;
  env.TOOLWIRE_DEADLINE_MS = String(ctx.deadlineMs);
  // The call's W3C trace context (issue 16), so a traced tool joins the caller's trace; never the host's own.
  if (ctx.traceparent !== undefined) env.TRACEPARENT = ctx.traceparent;
  else delete env.TRACEPARENT;
  if (ctx.tracestate !== undefined && ctx.traceparent !== undefined) env.TRACESTATE = ctx.tracestate;
  else delete env.TRACESTATE;
  return env;
}

/**
 * The environment of a stdio MCP server the host starts (DESIGN §7 "MCP servers"): the whole host
 * environment (`base`; `policy.inherit` does not apply: a server serves every call) + the server's
 * `env`, then without the host's credentials, as for a tool: every name in `policy.scrub` and every
 * variable whose value is the host's token, whichever layer set it.
 */
export function mcpServerEnv(
  extra: Readonly<Record<string, string>> | undefined,
  policy: EnvPolicy = DEFAULT_ENV_POLICY,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  copyEnv(env, base);
  if (extra !== undefined) copyEnv(env, extra);
  dropCredentials(env, policy);
  return env;
}

/** Remove from `env` every name in `policy.scrub` and every variable whose value is `policy.secret` (or it with one trailing newline). */
function dropCredentials(env: NodeJS.ProcessEnv, policy: EnvPolicy): void {
  const secret = policy.secret;
  for (const key of Object.keys(env)) {
    const value = env[key];
    if (policy.scrub.has(key) || (secret !== undefined && value !== undefined && (value === secret || value.replace(/\r?\n$/, '') === secret))) {
      delete env[key];
    }
  }
}

/** `env` without {@link CREDENTIAL_VARS}: what a process the host starts for itself (the spawn helper) gets. */
export function withoutCredentials(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy: NodeJS.ProcessEnv = {};
  copyEnv(copy, env);
  for (const name of CREDENTIAL_VARS) delete copy[name];
  return copy;
}

function copyOne(env: NodeJS.ProcessEnv, source: NodeJS.ProcessEnv, name: string): void {
  const value = source[name];
  if (value !== undefined) env[name] = value;
}

/**
 * Copy `source`'s own keys into `env` as data properties (what a spread does), key by key: a spread
 * of `process.env` takes V8's generic path through the environment's interceptors, which is slower
 * than this loop (bench/README.md item 20).
 */
function copyEnv(env: NodeJS.ProcessEnv, source: Readonly<Record<string, string | undefined>>): void {
  for (const key of Object.keys(source)) {
    if (key === '__proto__') Object.defineProperty(env, key, { value: source[key], enumerable: true, writable: true, configurable: true });
    else env[key] = source[key];
  }
}
