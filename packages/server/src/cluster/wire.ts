/**
 * The messages server nodes exchange over NATS (DESIGN §10): JSON, bytes as base64. They cross
 * only between nodes holding the cluster's NATS credentials; a message that does not parse is
 * dropped and logged by its receiver.
 */
import type { Capture, Failure } from '@toolwire/protocol';

/** A call sent to the node its host is connected to (reply subject: where its answers go). */
export interface CallRequest {
  host: string;
  /** The host's bare tool name. */
  tool: string;
  /** The exposed name the caller used. */
  name: string;
  id: string;
  input: unknown;
  workspace: string;
  agent: string;
  deadlineMs?: number;
  /** The caller takes live output: stream it (otherwise only the capture comes back). */
  stream?: boolean;
}

/** What the host's node sends to a call's reply subject, in order. */
export type CallAnswer =
  | { t: 'output'; stream: 'stdout' | 'stderr'; seq: number; data: string }
  /** A piece of the final capture's stdout or stderr (a capture may exceed one NATS message). */
  | { t: 'part'; stream: 'stdout' | 'stderr'; data: string }
  | { t: 'result'; exitCode: number; failure?: Failure };

/** Node → node: stop the call whose reply subject is `reply`, or credit its output chunk `seq`. */
export interface CallControl {
  reply: string;
  seq?: number;
}

/** A node's heartbeat: its id, the version of its local host set, and its boot (a restart is a new node state). */
export interface Heartbeat {
  node: string;
  version: number;
  boot: string;
}

/** One page of a node's hosts (answer to `state`). */
export interface StatePage {
  version: number;
  boot: string;
  hosts: { host: string; remote?: string; connectedAt: number; tools: unknown[] }[];
  /** Offset of the next page; absent on the last. */
  next?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON → bytes. */
export function encode(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Bytes → JSON object, or `undefined` when it does not parse to an object. */
export function decode<T>(data: Uint8Array): T | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(data));
    return typeof value === 'object' && value !== null ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

export const toB64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
export const fromB64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

/** Concatenate byte pieces. */
export function join(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Split a capture's stream into `part` answers of at most `max` bytes of data each. */
export function* parts(stream: 'stdout' | 'stderr', bytes: Uint8Array, max: number): Generator<CallAnswer> {
  for (let at = 0; at < bytes.length; at += max) yield { t: 'part', stream, data: toB64(bytes.subarray(at, at + max)) };
}

export type { Capture };
