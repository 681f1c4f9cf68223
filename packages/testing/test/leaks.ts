/**
 * The leak check of the kit's own tests: every server port, proxy port and host process a test
 * used is remembered, and `expectNothingLeft()` (in an afterAll) checks none is still listening or
 * running, and that the kit tracks no open handle.
 */
import { connect } from 'node:net';
import { expect } from 'vitest';
import { type FaultProxy, type TestHost, type TestServer, openHandles, waitUntil } from '@toolwire/testing';

const ports = new Set<number>();
const pids = new Set<number>();

/** Remember what `handle` opened; returns it. */
export function remember<T extends TestServer | TestHost | FaultProxy>(handle: T): T {
  if ('net' in handle) {
    ports.add(handle.net.port);
    if (handle.pid !== undefined) pids.add(handle.pid);
  } else ports.add(handle.port);
  return handle;
}

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export async function expectNothingLeft(): Promise<void> {
  expect(openHandles()).toEqual({ handles: 0, processes: 0 });
  await waitUntil(() => [...pids].every((pid) => !running(pid)), 'every host process to be gone');
  for (const port of ports) expect(await listening(port), `port ${port} still listening`).toBe(false);
  expect(ports.size).toBeGreaterThan(0);
}
