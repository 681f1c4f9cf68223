/**
 * The MCP door reads a POST body itself, before the SDK: to bound it, to parse it once, and to see
 * the `tools/call` arguments exactly as the agent sent them. What `JSON.parse` and the SDK would hand
 * on changed — a repeated key, a `__proto__` key (the SDK's copy of `arguments` drops it), a number
 * whose value does not survive the parse (`input-scan.ts`) — can be neither passed on unchanged nor
 * safely kept, so that call is refused with 65 and the reason ({@link inputErrorsOf}). Bytes that are
 * not UTF-8 (which decoding would replace with U+FFFD) make the body a parse error.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { scanInput } from './input-scan.js';

/** The body as the door read it: its value and its text. */
export type RawBody = { ok: true; body: unknown; text: string } | { ok: false; status: 400 | 413; code: number; message: string };

/**
 * `req`'s body, or `undefined` once it exceeds `maxBytes` (the request is then destroyed, as leaving
 * an async iteration of it early would). Rejects when the request errs or closes before its end.
 * Listeners rather than `for await`: the async iterator costs a promise and a wrapper per chunk.
 */
function bodyOf(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      done();
      req.destroy();
      resolve(undefined);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      done();
      reject(error);
    };
    const onClose = (): void => {
      done();
      reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    if (req.destroyed) {
      onClose();
      return;
    }
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
  });
}

/**
 * Read `req`'s body, at most `maxBytes` (more → 413), and parse it as JSON (not UTF-8 or not JSON →
 * 400, JSON-RPC parse error `-32700`).
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<RawBody> {
  const tooLarge = { ok: false, status: 413, code: -32000, message: `Payload Too Large: the request body must not exceed ${maxBytes} bytes` } as const;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge;
  const bytes = await bodyOf(req, maxBytes);
  if (bytes === undefined) return tooLarge;
  if (!isUtf8(bytes)) return { ok: false, status: 400, code: -32700, message: 'Parse error: the request body is not valid UTF-8' };
  const text = bytes.toString('utf8');
  try {
    return { ok: true, body: JSON.parse(text) as unknown, text };
  } catch {
    return { ok: false, status: 400, code: -32700, message: 'Parse error: the request body is not valid JSON' };
  }
}

/** Whether `message` is a `tools/call` request (with an id a response can name). */
function isCall(message: unknown): message is { id: string | number } {
  if (message === null || typeof message !== 'object') return false;
  const { method, id } = message as { method?: unknown; id?: unknown };
  return method === 'tools/call' && (typeof id === 'string' || typeof id === 'number');
}

/** What {@link inputErrorsOf} found. */
export interface InputErrors {
  /** Request id → why its call is refused (65). */
  byId: Map<string | number, string>;
  /** A call whose arguments are nested deeper than the bound: the door answers it itself (JSON-RPC `-32602`), the SDK never sees the body. */
  tooDeep?: { id: string | number; reason: string };
}

/**
 * For each `tools/call` request in `body` (one JSON-RPC message or a batch, parsed from `text`) whose
 * arguments would reach the tool changed or are nested deeper than `maxDepth` levels: request id → the
 * reason its call is refused (65), and the first too deep one. `undefined` when there is none (the
 * usual case). The text is scanned only when it holds such a call.
 */
export function inputErrorsOf(body: unknown, text: string, maxDepth?: number): InputErrors | undefined {
  const messages = Array.isArray(body) ? body : [body];
  if (!messages.some(isCall)) return undefined;
  let errors: InputErrors | undefined;
  for (const issue of scanInput(text, Array.isArray(body), undefined, maxDepth)) {
    const message: unknown = messages[issue.message];
    if (!isCall(message)) continue;
    errors ??= { byId: new Map() };
    errors.byId.set(message.id, issue.reason);
    if (issue.tooDeep && errors.tooDeep === undefined) errors.tooDeep = { id: message.id, reason: issue.reason };
  }
  return errors;
}

/**
 * For a door that reads MCP messages itself and forwards them to `/mcp` (the stdio door, `toolwire
 * mcp`): for each `tools/call` in `text` (one JSON-RPC message or a batch) whose arguments
 * `JSON.parse` would hand on changed, request id → its `arguments` text as sent (from the first
 * `arguments` value to the last, when the member is repeated), to be forwarded in place of the parsed
 * value so that `/mcp` judges what the agent sent and refuses the call 65 with the reason.
 * `undefined` when there is none, or when `text` is not JSON.
 */
export function argumentsAsSent(text: string, maxDepth?: number): Map<string | number, string> | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const messages = Array.isArray(body) ? body : [body];
  if (!messages.some(isCall)) return undefined;
  const spans = new Map<number, [number, number]>();
  let found: Map<string | number, string> | undefined;
  for (const issue of scanInput(text, Array.isArray(body), spans, maxDepth)) {
    const message: unknown = messages[issue.message];
    const span = spans.get(issue.message);
    if (!isCall(message) || span === undefined) continue;
    found ??= new Map();
    found.set(message.id, text.slice(span[0], span[1]));
  }
  return found;
}
