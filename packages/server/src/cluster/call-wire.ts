/**
 * A call sent to the node its host is connected to (DESIGN §10), as an item of a batch
 * (`batch.ts`): binary, its input as the JSON text the caller's node made. The host's node puts
 * that text into the host's `call` frame as it is (`RoutedCall.inputJson`): the input is neither
 * parsed nor encoded again there. It is trusted as the rest of the call is: only a node holding
 * the cluster's NATS credentials can send it, and that node encoded it with `JSON.stringify`.
 *
 * Layout (big-endian): flags (u8: 1 stream, 2 deadline, 4 input), `deadlineMs` (f64, 0 without
 * the flag), then `host`, `tool`, `name`, `id`, `workspace` and `agent`, each a u32 byte length
 * and its UTF-8, then the input's JSON text (UTF-8) to the end.
 */

/** A call's fields besides its input. */
export interface CallHead {
  host: string;
  /** The host's bare tool name. */
  tool: string;
  /** The exposed name the caller used. */
  name: string;
  id: string;
  workspace: string;
  agent: string;
  deadlineMs?: number;
  /** The caller takes live output: stream it (otherwise only the capture comes back). */
  stream?: boolean;
}

/** A decoded call: its fields, and its input's JSON text (`undefined`: the call has no input). */
export interface CallItem extends CallHead {
  inputJson: string | undefined;
}

const STREAM = 1;
const DEADLINE = 2;
const INPUT = 4;
/** Bytes before the first string. */
const FIXED = 9;

/** The call `head` with input `inputJson` (its JSON text; `undefined`: none) as an item's bytes. */
export function encodeCall(head: CallHead, inputJson: string | undefined): Uint8Array {
  const strings = [head.host, head.tool, head.name, head.id, head.workspace, head.agent];
  let size = FIXED + 4 * strings.length;
  for (const s of strings) size += Buffer.byteLength(s);
  if (inputJson !== undefined) size += Buffer.byteLength(inputJson);
  const out = Buffer.allocUnsafe(size);
  out[0] = (head.stream === true ? STREAM : 0) | (head.deadlineMs !== undefined ? DEADLINE : 0) | (inputJson !== undefined ? INPUT : 0);
  out.writeDoubleBE(head.deadlineMs ?? 0, 1);
  let at = FIXED;
  for (const s of strings) {
    const n = out.write(s, at + 4);
    out.writeUInt32BE(n, at);
    at += 4 + n;
  }
  if (inputJson !== undefined) out.write(inputJson, at);
  return out;
}

/** The call in an item's bytes, or `undefined` when they are not a well-formed call. */
export function decodeCall(data: Uint8Array): CallItem | undefined {
  if (data.length < FIXED + 24) return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const flags = view[0]!;
  const strings: string[] = [];
  let at = FIXED;
  for (let k = 0; k < 6; k++) {
    if (at + 4 > view.length) return undefined;
    const end = at + 4 + view.readUInt32BE(at);
    if (end > view.length) return undefined;
    strings.push(view.toString('utf8', at + 4, end));
    at = end;
  }
  const [host, tool, name, id, workspace, agent] = strings as [string, string, string, string, string, string];
  const inputJson = (flags & INPUT) !== 0 ? view.toString('utf8', at) : undefined;
  if (inputJson === undefined && at !== view.length) return undefined;
  const call: CallItem = { host, tool, name, id, workspace, agent, inputJson };
  if ((flags & DEADLINE) !== 0) call.deadlineMs = view.readDoubleBE(1);
  if ((flags & STREAM) !== 0) call.stream = true;
  return call;
}
