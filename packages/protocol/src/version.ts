/**
 * Wire protocol versions (DESIGN §5). A tool host offers every version it speaks as WebSocket
 * subprotocols, newest first (`Sec-WebSocket-Protocol: toolwire.v2, toolwire.v1`); the server picks
 * the newest one it speaks, and `hello.protocol` / `welcome.protocol` then carry that version. So a
 * host and a server of different releases still talk, at the older version: a v1 peer never sees a
 * v2 message (`output`, `credit`) or field (`welcome.output`, `result.streamed`).
 *
 * - 1 — hello, advertise, result; welcome, advertised, call, cancel.
 * - 2 — adds live output: `output` and `progress` (host → server), `credit` (server → host), `welcome.output`,
 *   `result.streamed` (DESIGN §5, "Live output"); `call.callId`, `call.traceparent`, `call.tracestate` (issue 16);
 *   and tool metadata: `title`, `annotations`, `outputSchema` per advertised tool, `result.content` and
 *   `result.structured` (tools of MCP servers).
 */

/** The newest wire protocol version this code speaks. */
export const PROTOCOL_VERSION = 2;

/** Every wire protocol version this code speaks, newest first. */
export const PROTOCOL_VERSIONS: readonly number[] = [2, 1];

/** The WebSocket subprotocol name of a protocol version: `toolwire.v<version>`. */
export function subprotocolOf(version: number): string {
  return `toolwire.v${version}`;
}

/** The protocol version a subprotocol name stands for, or `undefined` when it is not one of ours. */
export function versionOfSubprotocol(name: string | undefined): number | undefined {
  const match = name === undefined ? null : /^toolwire\.v([1-9][0-9]{0,3})$/.exec(name);
  if (!match) return undefined;
  const version = Number(match[1]);
  return PROTOCOL_VERSIONS.includes(version) ? version : undefined;
}

/** The subprotocol of the newest version (`toolwire.v2`). */
export const SUBPROTOCOL = subprotocolOf(PROTOCOL_VERSION);

/** Every subprotocol a tool host offers, newest first (`['toolwire.v2', 'toolwire.v1']`). */
export const SUBPROTOCOLS: readonly string[] = PROTOCOL_VERSIONS.map(subprotocolOf);
