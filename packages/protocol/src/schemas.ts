/**
 * JSON Schemas of every wire message (DESIGN §5), one per `type`. Compiled ahead of time into
 * `validators.generated.ts` (see `scripts/generate-validators.ts`), which `codec.ts` uses. Unknown keys are rejected everywhere (`additionalProperties: false`), which also
 * keeps `__proto__`-style keys out of decoded messages.
 */
import { FailureKind } from './codes.js';
import { CALL_ID_PATTERN, MAX_TRACESTATE_LENGTH, TRACEPARENT_PATTERN } from './trace-context.js';

const id = { type: 'string', minLength: 1, maxLength: 128 } as const;
const shortText = { type: 'string', maxLength: 256 } as const;
/** A count or offset: a non-negative integer no larger than a double holds exactly. */
const count = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

function message(type: string, properties: Record<string, unknown>, required: string[]) {
  return {
    type: 'object',
    properties: { type: { const: type }, ...properties },
    required: ['type', ...required],
    additionalProperties: false,
  } as const;
}

/**
 * Base64 alphabet (RFC 4648 §4) with padding only at the end: a stream marked `"base64"` holding
 * anything else is a wrong-shape frame (76). A single character class keeps the match linear and
 * free of backtracking, so a 16 MiB stream cannot blow the regex stack.
 */
const BASE64 = '^[A-Za-z0-9+/]*={0,2}$';

/**
 * Add "when `<stream>Encoding` is present (it can only be `base64`), `<stream>` is strict base64" to
 * a result schema. A schema dependency (draft-07 `dependencies`), not `if`/`then`: with `allErrors`
 * ajv records the failed `if` of every plain-text result as an error object and then drops it — an
 * allocation on every result frame.
 */
function withBase64Checks<S extends object>(schema: S) {
  const base64 = (stream: string) => ({ properties: { [stream]: { type: 'string', pattern: BASE64 } } });
  return { ...schema, dependencies: { stdoutEncoding: base64('stdout'), stderrEncoding: base64('stderr') } } as const;
}

/** Largest number of MCP content blocks one `result` carries (protocol 2 `content`). */
export const MAX_CONTENT_BLOCKS = 1024;

/** Shape of one advertised tool. Checked per tool by the server so one bad tool rejects only itself. */
export const toolSpecSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    title: shortText,
    description: { type: 'string' },
    inputSchema: { type: 'object' },
    annotations: {
      type: 'object',
      properties: {
        readOnlyHint: { type: 'boolean' },
        destructiveHint: { type: 'boolean' },
        idempotentHint: { type: 'boolean' },
        openWorldHint: { type: 'boolean' },
      },
      additionalProperties: false,
    },
    outputSchema: { type: 'object' },
  },
  required: ['name', 'inputSchema'],
  additionalProperties: false,
} as const;

/** Schemas of host → server messages, keyed by `type`. */
export const hostMessageSchemas = {
  hello: message('hello', { protocol: { type: 'integer' }, software: shortText, name: shortText }, ['protocol']),
  // No `items` here: the validator would walk every entry, and an advertise may list millions of
  // them. The server checks entries one by one against toolSpecSchema, and only a bounded number.
  advertise: message('advertise', { tools: { type: 'array' } }, ['tools']),
  result: withBase64Checks(
    message(
      'result',
      {
        id,
        stdout: { type: 'string' },
        stderr: { type: 'string' },
        stdoutEncoding: { const: 'base64' },
        stderrEncoding: { const: 'base64' },
        exitCode: { type: 'integer', minimum: 0, maximum: 255 },
        failure: { enum: Object.keys(FailureKind) },
        streamed: {
          type: 'object',
          properties: { stdout: count, stderr: count, chunks: count },
          required: ['stdout', 'stderr', 'chunks'],
          additionalProperties: false,
        },
        content: {
          type: 'array',
          maxItems: MAX_CONTENT_BLOCKS,
          items: { type: 'object', properties: { type: { type: 'string', minLength: 1, maxLength: 64 } }, required: ['type'] },
        },
        structured: { type: 'object' },
      },
      ['id', 'stdout', 'stderr', 'exitCode'],
    ),
  ),
  progress: message('progress', { id, message: shortText }, ['id']),
  output: {
    ...message('output', { id, stream: { enum: ['stdout', 'stderr'] }, seq: count, data: { type: 'string', minLength: 1 }, encoding: { const: 'base64' } }, [
      'id',
      'stream',
      'seq',
      'data',
    ]),
    dependencies: { encoding: { properties: { data: { type: 'string', pattern: BASE64 } } } },
  },
} as const;

/** Schemas of server → host messages, keyed by `type`. */
export const serverMessageSchemas = {
  welcome: message(
    'welcome',
    {
      protocol: { type: 'integer' },
      host: shortText,
      heartbeatMs: { type: 'integer', minimum: 1 },
      limits: {
        type: 'object',
        properties: {
          maxPayload: { type: 'integer', minimum: 1 },
          maxInFlight: { type: 'integer', minimum: 1 },
          maxTools: { type: 'integer', minimum: 0 },
        },
        required: ['maxPayload', 'maxInFlight', 'maxTools'],
        additionalProperties: false,
      },
      output: {
        type: 'object',
        properties: { windowBytes: { type: 'integer', minimum: 1 }, maxChunkBytes: { type: 'integer', minimum: 1 } },
        required: ['windowBytes', 'maxChunkBytes'],
        additionalProperties: false,
      },
    },
    ['protocol', 'host', 'heartbeatMs', 'limits'],
  ),
  advertised: message(
    'advertised',
    {
      accepted: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, as: { type: 'string' } },
          required: ['name', 'as'],
          additionalProperties: false,
        },
      },
      rejected: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, reason: { type: 'string' } },
          required: ['name', 'reason'],
          additionalProperties: false,
        },
      },
      moreRejected: { type: 'integer', minimum: 1 },
    },
    ['accepted', 'rejected'],
  ),
  call: message(
    'call',
    {
      id,
      tool: { type: 'string', minLength: 1, maxLength: 64 },
      input: {},
      workspace: { type: 'string' },
      agent: { type: 'string' },
      deadlineMs: { type: 'integer', minimum: 0 },
      // Protocol 2 (issue 16): the call's own id (the executor's), and W3C trace context.
      callId: { type: 'string', pattern: CALL_ID_PATTERN.source },
      traceparent: { type: 'string', pattern: TRACEPARENT_PATTERN.source },
      tracestate: { type: 'string', maxLength: MAX_TRACESTATE_LENGTH, pattern: '^[\x20-\x7e]*$' },
    },
    ['id', 'tool', 'input', 'workspace', 'agent', 'deadlineMs'],
  ),
  cancel: message('cancel', { id, reason: { enum: ['stop', 'deadline'] } }, ['id', 'reason']),
  credit: message('credit', { id, bytes: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } }, ['id', 'bytes']),
} as const;
