/**
 * The MCP door reads a POST body itself, before the SDK: to bound it, to parse it once, and to see
 * the `tools/call` arguments exactly as the agent sent them. The SDK's request schema copies
 * `arguments` into a fresh object, which silently drops a `__proto__` key (assigning it sets the
 * copy's prototype instead); nested values pass through unchanged. Such a key can be neither passed
 * on unchanged nor safely kept, so the call is refused with 65 and the reason ({@link inputErrorsOf}).
 */
import type { IncomingMessage } from 'node:http';

/** The body as the door read it. */
export type RawBody = { ok: true; body: unknown } | { ok: false; status: 400 | 413; code: number; message: string };

/** Read `req`'s body, at most `maxBytes` (more → 413), and parse it as JSON (not JSON → 400, JSON-RPC parse error). */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<RawBody> {
  const tooLarge = { ok: false, status: 413, code: -32000, message: `Payload Too Large: the request body must not exceed ${maxBytes} bytes` } as const;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return tooLarge;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return tooLarge;
    chunks.push(chunk);
  }
  try {
    return { ok: true, body: JSON.parse(Buffer.concat(chunks, size).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, code: -32700, message: 'Parse error: the request body is not valid JSON' };
  }
}

/** Keys that cannot reach a tool unchanged through a JavaScript object copy. */
const UNSAFE_KEYS = new Set(['__proto__']);
/** Nesting examined at most (deeper input is left to the tool's schema and the host's JSON bounds). */
const MAX_DEPTH = 256;

/** The path of the first unsafe key in `value` (e.g. `arguments.a[2].__proto__`), or `undefined`. */
function unsafeKeyPath(value: unknown, path: string, depth: number): string | undefined {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unsafeKeyPath(value[i], `${path}[${i}]`, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (UNSAFE_KEYS.has(key)) return `${path}.${key}`;
    const found = unsafeKeyPath((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * For each `tools/call` request in `body` (one JSON-RPC message or a batch) whose arguments hold an
 * unsafe key: request id → the reason its call is refused. `undefined` when there is none (the usual case).
 */
export function inputErrorsOf(body: unknown): Map<string | number, string> | undefined {
  let errors: Map<string | number, string> | undefined;
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message === null || typeof message !== 'object') continue;
    const { method, id, params } = message as { method?: unknown; id?: unknown; params?: { arguments?: unknown } };
    if (method !== 'tools/call' || (typeof id !== 'string' && typeof id !== 'number')) continue;
    const path = unsafeKeyPath(params?.arguments, 'arguments', 0);
    if (path === undefined) continue;
    errors ??= new Map();
    errors.set(id, `input key ${JSON.stringify(path)} cannot be passed to a tool unchanged ("__proto__" is refused); rename it`);
  }
  return errors;
}
