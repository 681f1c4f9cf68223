/**
 * What the MCP door (`door.ts`) reads off a request body before it picks a path, and how it answers
 * with a JSON-RPC error of its own.
 */
import type { ServerResponse } from 'node:http';
import { STREAM_META } from './live-output.js';

/** Whether a message of `body` (a JSON-RPC message or batch) asks for progress or live output while it runs. */
export function asksLiveOutput(body: unknown): boolean {
  for (const m of Array.isArray(body) ? body : [body]) {
    if (m === null || typeof m !== 'object') continue;
    const meta = (m as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
    if (meta !== null && typeof meta === 'object' && (meta.progressToken !== undefined || meta[STREAM_META] !== undefined)) return true;
  }
  return false;
}

/** Whether `body` (a JSON-RPC message or batch) holds an `initialize` request. */
export function hasInitialize(body: unknown): boolean {
  return (Array.isArray(body) ? body : [body]).some((m) => m !== null && typeof m === 'object' && (m as { method?: unknown }).method === 'initialize');
}

/** Answer with a JSON-RPC error object for request `id` (`null`: none named). */
export function replyError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: string | number | null = null,
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id }));
}
