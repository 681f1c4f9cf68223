/**
 * The rig of the race tests: an in-process server on 127.0.0.1 with a recording logger and one raw
 * host (alpha, tool `slow`) answering by hand, plus helpers to run many calls on concurrent lanes.
 */
import { expect } from 'vitest';
import { WebSocket } from 'ws';
import type { RoutedCall, RoutedCapture, ToolwireServerOptions } from '@toolwire/server';
import type { ServerSeams } from '../../packages/server/src/config.js';
import { type TestServer, startServer } from '@toolwire/testing';
import { HOST_TOKEN, defer, startServer as startServerWithSeams, text, type Started } from '../helpers.js';
import { drivenHost, recordingLogger, waitFor, type DrivenHost } from './harness.js';

/** Iterations of each race (issue 3 §4). */
export const ITERATIONS = 1000;

export interface Rig<S extends Started | TestServer = TestServer> {
  started: S;
  host: DrivenHost;
  log: ReturnType<typeof recordingLogger>;
}

/** A kit server with a recording logger and the driven host alpha. */
export async function rig(options: ToolwireServerOptions = {}): Promise<Rig> {
  const log = recordingLogger();
  const started = await startServer({ logger: log.logger, cancelGraceMs: 2_000, ...options });
  defer(() => started.close());
  return { started, host: await drivenHost(started), log };
}

/** The same with the server's internal test seams (not public options, so not through the kit's server). */
export async function rigWithSeams(seams: ServerSeams): Promise<Rig<Started>> {
  const log = recordingLogger();
  const started = await startServerWithSeams({ logger: log.logger, cancelGraceMs: 2_000 }, seams);
  return { started, host: await drivenHost({ url: started.url, token: HOST_TOKEN }), log };
}

/** Route one call to alpha__slow tagged `tag`; resolves with the capture and the call's controller. */
export function routeTagged(started: Started | TestServer, tag: string, extra: Partial<RoutedCall> = {}) {
  const controller = new AbortController();
  const call: RoutedCall = { id: `c-${tag}`, name: 'alpha__slow', input: { tag }, workspace: '', agent: 'agent', signal: controller.signal, ...extra };
  const settled = { count: 0 };
  const pending = started.server.router.route(call).then((capture) => {
    settled.count++;
    return capture!;
  });
  return { pending, controller, settled };
}

/** Run `body(i)` for i in 0…n−1 on `lanes` concurrent lanes. */
export async function inLanes(n: number, lanes: number, body: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < n) await body(next++);
    }),
  );
}

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A capture is the host's own answer to call `tag`, or 130 keeping that same answer as partial output. */
export function expectOwnOr130(capture: RoutedCapture, tag: string): 'result' | 'stop' {
  expect(text(capture.stdout)).toBe(`out-${tag}`);
  if (capture.exitCode === 0) return 'result';
  expect(capture.exitCode).toBe(130);
  expect(text(capture.stderr)).toMatch(/toolwire: cancelled by stop\n$/);
  return 'stop';
}

export async function expectQuiet(r: Rig<Started | TestServer>): Promise<void> {
  await waitFor(() => r.started.server.router.hosts().every((h) => h.inFlight === 0), 'every pending map to be empty');
  expect(r.log.errors()).toEqual([]);
  expect(r.host.ws.readyState).toBe(WebSocket.OPEN);
}
