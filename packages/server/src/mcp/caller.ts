/**
 * What the MCP door and its sessions share without the MCP SDK: the caller principal, the tool
 * source, the `tools/call` `_meta` keys and the principal → SDK `AuthInfo` wrapper. Kept apart from
 * `mcp-server.ts` so that importing `@toolwire/server` does not load the SDK (it is loaded by the
 * door at the first MCP session, `sdk.ts`). Type-only SDK imports here cost nothing at run time.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { ExecuteRequest } from '../executor/request.js';
import type { InjectedTool } from '../seam.js';
import { traceContextOf } from './trace-context.js';

/** `_meta` key of a call's deadline, ms. */
export const DEADLINE_META = 'toolwire/deadlineMs';
/** `_meta` key of a call's workspace root. */
export const WORKSPACE_META = 'toolwire/workspace';

/** An authenticated MCP caller (a `Principal` of role `caller`): `name` is the agent id. */
export interface CallerPrincipal {
  role: string;
  name: string;
  /** Callable tool names; `"*"` = all; default all. */
  grant?: readonly string[];
}

/** The tool set and its change event (the router). */
export interface ToolSource {
  tools(): InjectedTool[];
  on(event: 'toolsChanged', listener: () => void): unknown;
  off(event: 'toolsChanged', listener: () => void): unknown;
}

/** What the door knows of one HTTP request, for the handlers of the messages it carries. */
export interface RequestState {
  /**
   * The HTTP response the answers stream on: live output waits for it to drain, and a call whose
   * response closes before it was finished is stopped (the client went away).
   */
  response?: ServerResponse;
  /** `tools/call` request id → why its arguments cannot reach the tool unchanged (the call completes 65). */
  inputErrors?: ReadonlyMap<string | number, string>;
  /** The HTTP request's headers (its W3C `traceparent` / `tracestate`). */
  headers?: IncomingHttpHeaders;
}

/**
 * Wrap a principal as the SDK's `AuthInfo` so each request's handler sees the caller who sent it
 * (`extra.principal`) and what the door knows of the HTTP request (`extra.request`).
 */
export function authInfoOf(principal: CallerPrincipal, request: RequestState = {}): AuthInfo {
  return { token: '', clientId: principal.name, scopes: [...(principal.grant ?? ['*'])], extra: { principal, request } };
}

/** A `tools/call` as both of the door's paths hand it to the executor (the SDK session's handler and `plain-call.ts`). */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown> | undefined;
  /** `params._meta`, already checked: deadline a positive integer, workspace a string, when present. */
  meta: Record<string, unknown> | undefined;
  deadlineMs: number | undefined;
  workspace: string | undefined;
  /** Why the arguments cannot reach the tool unchanged (`raw-body.ts`), if they cannot. */
  inputError: string | undefined;
}

/** The executor request of `call` for `caller`: the same fields whichever path serves it. */
export function executeRequestOf(
  call: ToolCall,
  caller: CallerPrincipal,
  signal: AbortSignal,
  headers: IncomingHttpHeaders | undefined,
  live?: Pick<ExecuteRequest, 'onOutput' | 'onProgress'>,
): ExecuteRequest {
  return {
    name: call.name,
    input: call.arguments ?? {},
    agent: caller.name,
    role: caller.role,
    ...(caller.grant !== undefined && { grant: caller.grant }),
    ...(call.workspace !== undefined && { workspace: call.workspace }),
    ...(call.deadlineMs !== undefined && { deadlineMs: call.deadlineMs }),
    signal,
    ...live,
    ...traceContextOf(call.meta, headers),
    ...(call.inputError !== undefined && { inputError: call.inputError }),
  };
}
