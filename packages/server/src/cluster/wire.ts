/**
 * The messages server nodes exchange over NATS (DESIGN §10): JSON, except a call's answers, which
 * are binary (`answer.ts`). They cross only between nodes holding the cluster's NATS credentials; a
 * message that does not parse is dropped and logged by its receiver.
 */
import type { Capture } from '@toolwire/protocol';

/**
 * A call sent to the node its host is connected to, as an item of a batch (`batch.ts`) whose reply
 * subject is where its answers go, each an item with the call's id.
 */
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

/** Node → node: stop call `id` of the node whose answers go to `reply`, or credit its output chunk `seq`. */
export interface CallControl {
  reply: string;
  id: number;
  seq?: number;
}

/** A node's heartbeat: its id, the version of its local host set, and its boot (a restart is a new node state). */
export interface Heartbeat {
  node: string;
  version: number;
  boot: string;
}

/**
 * A `state` request: the page at `offset` of the host set `version` (absent: the current one); or,
 * with `since` (a version of the same boot the asking node applied), the changes after it.
 */
export interface StateRequest {
  offset: number;
  version?: number;
  since?: number;
}

/**
 * One page of a node's hosts (answer to `state`). Hosts of a fleet mostly advertise the same tools:
 * each distinct tool set of the page travels once in `sets`, and each host names its set by index.
 */
export interface StatePage {
  version: number;
  boot: string;
  sets: unknown[][];
  hosts: { host: string; remote?: string; connectedAt: number; set: number }[];
  /** Offset of the next page; absent on the last. */
  next?: number;
  /** Set on an answer to `since`: `hosts` are the hosts changed after that version, `gone` those that left; the only page. */
  since?: number;
  gone?: string[];
}

const decoder = new TextDecoder();

/**
 * JSON → bytes. `Buffer.from` rather than `TextEncoder`: it copies a small text into Node's shared
 * pool, where `TextEncoder#encode` allocates an `ArrayBuffer` of its own for every message — one per
 * call between nodes, each a backing store the garbage collector must track and free.
 */
export function encode(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value));
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

export type { Capture };
