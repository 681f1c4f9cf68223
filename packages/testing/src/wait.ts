/**
 * Bounded, event-driven waits: each check runs at once, then again on every `toolsChanged` of the
 * server's router and on a short poll (what has no event: a host's hello, a call in flight), and
 * rejects with what it waited for after `timeoutMs`. No sleeps.
 */
import { delayMs } from './connection.js';
import type { TestServer } from './server.js';

/** Bound and poll interval of a wait, ms. */
export interface WaitOptions {
  /** Default 10000. */
  timeoutMs?: number;
  /** Default 10. */
  everyMs?: number;
}

/** `options` with defaults filled. @throws RangeError for a bound that is negative, not a number, or over 2^31 - 1 ms */
function bounds(options: WaitOptions): Required<WaitOptions> {
  return { timeoutMs: delayMs('timeoutMs', options.timeoutMs ?? 10_000), everyMs: delayMs('everyMs', options.everyMs ?? 10) };
}

/**
 * Resolve with the first truthy value of `check` (sync or async), checked at once, every `everyMs`
 * and whenever `server`'s tools change; reject after `timeoutMs` naming `what`.
 * @throws RangeError at once (not a rejection) for a `timeoutMs` or `everyMs` that is negative, not a number, or over 2^31 - 1
 */
export function waitUntil<T>(check: () => T | Promise<T>, what: string, options: WaitOptions & { server?: TestServer } = {}): Promise<NonNullable<T>> {
  const { timeoutMs, everyMs } = bounds(options);
  const router = options.server?.router;
  return new Promise<NonNullable<T>>((resolve, reject) => {
    let done = false;
    let running = false;
    let poll: NodeJS.Timeout | undefined;
    const finish = (settle: () => void): void => {
      done = true;
      clearTimeout(poll);
      clearTimeout(bound);
      router?.off('toolsChanged', attempt);
      settle();
    };
    const bound = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))), timeoutMs);
    function attempt(): void {
      if (done || running) return;
      running = true;
      clearTimeout(poll);
      Promise.resolve()
        .then(check)
        .then(
          (value) => {
            running = false;
            if (done) return;
            if (value) finish(() => resolve(value));
            else poll = setTimeout(attempt, everyMs);
          },
          (error: unknown) => finish(() => reject(error instanceof Error ? error : new Error(String(error)))),
        );
    }
    router?.on('toolsChanged', attempt);
    attempt();
  });
}

/** Resolve once every name in `names` is among the server's tools (exposed names, e.g. `alpha__echo`). */
export function waitForTools(server: TestServer, names: readonly string[], options: WaitOptions = {}): Promise<void> {
  return waitUntil(
    () => {
      const listed = new Set(server.router.tools().map((t) => t.name));
      return names.every((n) => listed.has(n));
    },
    `tools ${names.join(', ')}`,
    { ...options, server },
  ).then(() => undefined);
}

/** Resolve at the server's next `toolsChanged` (a host advertised a different set, or one with tools left). */
export function waitForToolsChanged(server: TestServer, options: WaitOptions = {}): Promise<void> {
  const { timeoutMs } = bounds(options);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      server.router.off('toolsChanged', changed);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for toolsChanged`));
    }, timeoutMs);
    function changed(): void {
      clearTimeout(timer);
      server.router.off('toolsChanged', changed);
      resolve();
    }
    server.router.on('toolsChanged', changed);
  });
}

/** Resolve once host `name` is connected to the server (`connected: false`: once it is not). */
export function waitForHost(server: TestServer, name: string, options: WaitOptions & { connected?: boolean } = {}): Promise<void> {
  const want = options.connected ?? true;
  return waitUntil(() => server.router.hosts().some((h) => h.name === name) === want, `host ${name} to be ${want ? '' : 'dis'}connected`, {
    ...options,
    server,
  }).then(() => undefined);
}

/** Resolve once at least `count` (default 1) calls are in flight, on host `host` or on all hosts together. */
export function waitForCallInFlight(server: TestServer, options: WaitOptions & { host?: string; count?: number } = {}): Promise<void> {
  const count = options.count ?? 1;
  return waitUntil(
    () =>
      server.router
        .hosts()
        .filter((h) => options.host === undefined || h.name === options.host)
        .reduce((sum, h) => sum + h.inFlight, 0) >= count,
    `${count} call(s) in flight${options.host ? ` on ${options.host}` : ''}`,
    { ...options, server },
  ).then(() => undefined);
}
