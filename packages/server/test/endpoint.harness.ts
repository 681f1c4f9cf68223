/**
 * Test harness for the host endpoint: an `http.Server` on 127.0.0.1 port 0 whose 'upgrade' goes to a
 * `HostEndpoint`, raw `ws` clients acting as tool hosts, and bounded waits. Everything started here is
 * torn down by `teardown()` (call it in afterEach).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { AuthLimiter } from '../src/auth/limiter.js';
import { TokenTable } from '../src/auth/tokens.js';
import { HostEndpoint } from '../src/endpoint/host-endpoint.js';
import type { Logger, ToolwireServerOptions } from '../src/options.js';
import { type ServerConfig, resolveServerConfig } from '../src/config.js';
import { Router, type RouterOptions } from '../src/router/router.js';
import type { RoutedCall } from '../src/seam.js';

export const ALPHA_TOKEN = 'alpha-token-0123456789abcdef';
export const BETA_TOKEN = 'beta-token-0123456789abcdef';
export const CALLER_TOKEN = 'caller-token-0123456789abcdef';

const teardowns: (() => Promise<void> | void)[] = [];

/** Run every registered teardown step, newest first. */
export async function teardown(): Promise<void> {
  while (teardowns.length > 0) {
    try {
      await teardowns.pop()!();
    } catch {
      // keep tearing down
    }
  }
}

/** One log call captured by {@link recordingLogger}. */
export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: unknown;
  msg: unknown;
}

/** A logger that keeps every call, for asserting that something was logged. */
export function recordingLogger(): { logger: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (obj: unknown, msg?: unknown) => void entries.push({ level, obj, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  return { logger, entries };
}

export interface Harness {
  url: string;
  options: ServerConfig;
  router: Router;
  endpoint: HostEndpoint;
  http: Server;
}

/** Start an endpoint with hosts `alpha` and `beta` and caller `agent`, on 127.0.0.1:0. */
export async function startEndpoint(
  overrides: ToolwireServerOptions = {},
  makeRouter: (options: RouterOptions) => Router = (options) => new Router(options),
): Promise<Harness> {
  const options = resolveServerConfig({
    hosts: [
      { name: 'alpha', token: ALPHA_TOKEN },
      { name: 'beta', token: BETA_TOKEN },
    ],
    callers: [{ name: 'agent', token: CALLER_TOKEN }],
    ...overrides,
  });
  const tokens = new TokenTable(options.hosts, options.callers);
  const router = makeRouter(options.router);
  const endpoint = new HostEndpoint({ options: options.endpoint, tokens, router, limiter: new AuthLimiter(options.limiter) });
  const http = createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  http.on('upgrade', (req, socket, head) => endpoint.handleUpgrade(req, socket, head));
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  teardowns.push(async () => {
    await endpoint.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  const { port } = http.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, options, router, endpoint, http };
}

/** Open a raw WebSocket as a tool host (no client library; `token` null = no Authorization); torn down at teardown. */
export async function rawHost(url: string, token: string | null = ALPHA_TOKEN, opts: { autoPong?: boolean } = {}): Promise<WebSocket> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const ws = new WebSocket(url, { headers, autoPong: opts.autoPong ?? true });
  ws.on('error', () => {});
  teardowns.push(() => {
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  });
  await once(ws, 'open');
  return ws;
}

/** Resolves with the next JSON frame of `type`; rejects if the socket closes first. */
export function nextFrame(ws: WebSocket, type: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: Buffer): void => {
      const message = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      if (message.type !== type) return;
      ws.off('message', onMessage);
      ws.off('close', onClose);
      resolve(message);
    };
    const onClose = (): void => reject(new Error(`socket closed before a ${type} frame`));
    ws.on('message', onMessage);
    ws.on('close', onClose);
  });
}

/** Resolves with the close code the socket receives. */
export function closeCode(ws: WebSocket): Promise<number> {
  return once(ws, 'close').then(([code]) => code as number);
}

/** Send a frame as JSON. */
export function send(ws: WebSocket, message: unknown): void {
  ws.send(JSON.stringify(message));
}

/** hello → welcome → advertise → advertised on a raw socket; resolves with both answers. */
export async function helloAndAdvertise(ws: WebSocket, tools: unknown[], hello: Record<string, unknown> = {}) {
  const welcome = nextFrame(ws, 'welcome');
  send(ws, { type: 'hello', protocol: 1, software: 'raw-test', ...hello });
  const welcomed = await welcome;
  const advertised = nextFrame(ws, 'advertised');
  send(ws, { type: 'advertise', tools });
  return { welcome: welcomed, advertised: await advertised };
}

/** A tool spec the tests advertise. */
export const SLOW = { name: 'slow', description: 'answers when told', inputSchema: { type: 'object' } };

/** A `RoutedCall` to `name` with its own AbortController. */
export function routedCall(name: string, extra: Partial<RoutedCall> = {}): { call: RoutedCall; controller: AbortController } {
  const controller = new AbortController();
  const call: RoutedCall = { id: 'caller-1', name, input: {}, workspace: '/ws', agent: 'agent', signal: controller.signal, ...extra };
  return { call, controller };
}

/** Poll `check` (sync or async) until truthy, at most `timeoutMs`; throws naming `what` on expiry. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 3_000): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Connect alpha, advertise SLOW, route one call and wait for its `call` frame. */
export async function hostWithCall(h: Harness, extra: Partial<RoutedCall> = {}) {
  const ws = await rawHost(h.url);
  await helloAndAdvertise(ws, [SLOW]);
  const frame = nextFrame(ws, 'call');
  const { call, controller } = routedCall('alpha__slow', extra);
  const pending = h.router.route(call);
  const sent = await frame;
  return { ws, pending, controller, id: sent.id as string, sent };
}

/** Bytes as UTF-8 text. */
export const text = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? new Uint8Array(0)).toString('utf8');
