/** JSON-RPC messages as the caller commands read them off the wire (`mcp.ts`). */
import { RpcError } from './errors.js';

/** A JSON-RPC message as read off the wire (only the fields looked at). */
export interface RpcMessage {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown };
}

/** `text` parsed as JSON, or `undefined`. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The JSON-RPC error message in an HTTP error body (`{"error":{"message":…}}`), else the body's first line. */
export function errorDetail(body: string): string {
  const message = (parseJson(body) as RpcMessage | undefined)?.error?.message;
  if (typeof message === 'string') return message;
  return body.split('\n')[0]!.slice(0, 200);
}

/** The answer to request `id` among `messages` (a JSON-RPC message or a batch). */
export function answerOf(parsed: unknown, id: number): RpcMessage | undefined {
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return messages.find((m): m is RpcMessage => typeof m === 'object' && m !== null && !('method' in m) && (m as RpcMessage).id === id);
}

/** The notifications (a method, no id) among `parsed` (a JSON-RPC message or a batch). */
export function notificationsOf(parsed: unknown): RpcMessage[] {
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return messages.filter((m): m is RpcMessage => typeof m === 'object' && m !== null && 'method' in m && !('id' in m));
}

/** The result of a JSON-RPC answer; rejects an error answer as a {@link RpcError}. */
export function resultOf(answer: RpcMessage | undefined): unknown {
  if (answer?.error !== undefined) {
    const { code, message } = answer.error;
    throw new RpcError(typeof code === 'number' ? code : undefined, typeof message === 'string' ? message : JSON.stringify(answer.error));
  }
  return answer?.result;
}
