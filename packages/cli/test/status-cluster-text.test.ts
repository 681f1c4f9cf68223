/**
 * `toolwire status` on a cluster node: a host connected to another node has no heartbeat seen here
 * (its own node pings it), so its line says where its heartbeats are kept, not "no heartbeat yet".
 */
import { describe, expect, it } from 'vitest';
import { type StatusAnswer, statusText } from '../src/commands/status-text.js';

describe('toolwire status text on a cluster node', () => {
  it('a host on another node shows where its heartbeats are kept, not "no heartbeat yet"; a host on this node shows its heartbeat', () => {
    const at = Date.now();
    const snapshot = {
      at,
      node: 'a',
      nodes: ['a', 'b'],
      hosts: [
        { name: 'here', node: 'a', remote: '127.0.0.1', protocol: 2, connectedAt: at - 5000, lastHeartbeatAt: at - 2000, inFlight: 0, tools: [] },
        { name: 'there', node: 'b', remote: '127.0.0.1', connectedAt: at - 5000, inFlight: 0, tools: [] },
      ],
      calls: [],
      callsInFlight: 0,
      recent: [],
    } as unknown as StatusAnswer;
    const text = statusText(snapshot);
    expect(text).toMatch(/^ {2}here {2}node a {2}127\.0\.0\.1 {2}v2 {2}connected 5 s ago {2}heartbeat 2 s ago {2}0 tools/m);
    expect(text).toMatch(/^ {2}there {2}node b {2}127\.0\.0\.1 {2}connected 5 s ago {2}heartbeats on node b {2}0 tools/m);
  });
});
