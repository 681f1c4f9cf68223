/**
 * Shared by the security suites: a real ToolwireServer on 127.0.0.1:0 with hosts `alpha`/`beta` and
 * caller `agent`, and a cleanup list each suite drains in its `afterEach`.
 */
import type { ToolwireServerOptions } from '../src/options.js';
import { ToolwireServer } from '../src/toolwire-server.js';

export const ALPHA = 'alpha-token-0123456789abcdef';
export const BETA = 'beta-token-0123456789abcdef';
export const CALLER = 'caller-token-0123456789abcdef';

/** Teardown steps, run in reverse order by {@link drainCleanups}. */
export const cleanups: (() => Promise<void> | void)[] = [];

/** Run every registered teardown (call from `afterEach`). */
export async function drainCleanups(): Promise<void> {
  while (cleanups.length > 0) await cleanups.pop()!();
}

/** Start a server with the standard identities plus `options`; closed at cleanup. */
export async function start(options: ToolwireServerOptions = {}) {
  const server = new ToolwireServer({
    hosts: [
      { name: 'alpha', token: ALPHA },
      { name: 'beta', token: BETA },
    ],
    callers: [{ name: 'agent', token: CALLER }],
    ...options,
  });
  const info = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return { server, ...info };
}
