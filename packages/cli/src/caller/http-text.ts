/**
 * Reading the door's HTTP answers for the MCP caller (`mcp.ts`): a bounded response body as text,
 * and the words a broken connection is described with.
 */
import type { IncomingMessage } from 'node:http';
import { ServerLostError } from './errors.js';

/** Largest error or JSON body read, bytes (more is cut off: only its start is shown or parsed). */
const MAX_BODY_BYTES = 1024 * 1024;

/** The most telling words of a socket error (none: the connection closed): its errno code or its message. */
export function describe(error?: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error === undefined || code === 'ECONNRESET' || (error instanceof Error && error.message === 'aborted')) return 'the connection was closed';
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : typeof error === 'string' ? error : 'the connection failed';
}

/** `error` as an Error (a rejection reason is always one). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(typeof error === 'string' ? error : 'unknown failure');
}

/** Read `res` as UTF-8, at most {@link MAX_BODY_BYTES} (the rest is dropped). */
export function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (text.length < MAX_BODY_BYTES) text += chunk;
    });
    res.on('end', () => resolve(text));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new ServerLostError(`the response broke (${describe()})`));
    });
  });
}
