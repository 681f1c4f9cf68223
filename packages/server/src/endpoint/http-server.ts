/**
 * The server's one `http.Server` (an `https.Server` with `tls`) and what arrives on it, for
 * `ToolwireServer`: WebSocket upgrades (to the host endpoint), requests by path (`/mcp`, `/status`,
 * `/metrics`, `/healthz`, OAuth discovery, else 404), and the requests and upgrades whose `Host` the
 * {@link HostPolicy} refuses (HTTP 403) or that node:http cannot take (431, 408, 400).
 */
import { type IncomingMessage, type Server as HttpServer, type ServerResponse, createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AuthLimiter } from '../auth/limiter.js';
import type { TokenTable } from '../auth/tokens.js';
import type { McpDoor } from '../mcp/door.js';
import type { ServerMetrics } from '../observe/metrics.js';
import { serveMetrics } from '../observe/metrics-endpoint.js';
import type { Logger, ServerTls } from '../options.js';
import { type HttpOptions, httpServerOptions } from '../preauth/config.js';
import type { PreAuthGuard } from '../preauth/guard.js';
import type { Router } from '../router/router.js';
import type { StatusPage } from '../status/status-http.js';
import type { HostEndpoint } from './host-endpoint.js';
import { type HostPolicy, answerOAuthDiscovery, refuseHost } from './http-front.js';
import { clientErrorStatus, rejectUpgrade } from './http-reject.js';
import { headerOf } from './request-header.js';
import { onTlsClientError } from './tls-front.js';

/** The components a request or an upgrade is handed to (the server's own, made before the http server). */
export interface HttpFront {
  hostPolicy: HostPolicy;
  hostEndpoint: HostEndpoint;
  preAuth: PreAuthGuard;
  mcp: McpDoor;
  status: StatusPage;
  /** `undefined` with `metrics: false` (then `/metrics` answers 404). */
  metrics: ServerMetrics | undefined;
  tokens: TokenTable;
  limiter: AuthLimiter;
  router: Router;
  logger: Logger;
}

/**
 * The http(s) server with its listeners attached (requests, upgrades, `error`, `clientError`,
 * `tlsClientError`, the pre-auth guard's connection accounting); not listening yet.
 * @param http node:http limits (`keepAliveTimeoutMs`, `maxHeadersCount`, timeouts)
 * @param tls certificate and key (PEM): an `https.Server`, TLS 1.2 at least; `undefined`: plain http
 */
export function createHttpServer(front: HttpFront, http: HttpOptions, tls: ServerTls | undefined): HttpServer {
  const log = front.logger;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => serveRequest(front, req, res);
  let server: HttpServer;
  const httpOptions = httpServerOptions(http);
  if (tls !== undefined) {
    const https = createHttpsServer({ ...httpOptions, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, onRequest);
    // A failed TLS handshake (wrong CA, plain HTTP on the TLS port) only concerns that socket.
    https.on('tlsClientError', onTlsClientError(log));
    server = https;
  } else {
    server = createServer(httpOptions, onRequest);
  }
  server.keepAliveTimeout = http.keepAliveTimeoutMs;
  server.maxHeadersCount = http.maxHeadersCount;
  // The TCP socket, also under TLS (its handshake is pre-auth time too).
  front.preAuth.listenTo(server);
  server.on('upgrade', (req, socket, head) => {
    // Headers read from rawHeaders: a refused upgrade never builds `req.headers` (endpoint/request-header.ts).
    const refused = front.hostPolicy.refusal(headerOf(req, 'host'));
    if (refused === undefined) return front.hostEndpoint.handleUpgrade(req, socket, head);
    socket.on('error', (error) => log.debug({ err: error }, 'refused upgrade socket error'));
    log.debug({ remote: req.socket.remoteAddress, host: String(req.headers.host).slice(0, 100) }, 'upgrade refused: Host not allowed');
    rejectUpgrade(socket, 403, undefined, refused); // the reason, as the HTTP 403 does: a tool host shows it
  });
  server.on('error', (error) => log.error({ err: error }, 'http server error'));
  // A request node:http cannot take (head too large or too slow, malformed): answer as node:http
  // would (431, 408, 400), then close.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    log.debug({ err: error }, 'http client error');
    const status = clientErrorStatus(error);
    if (status === undefined) socket.destroy();
    else rejectUpgrade(socket, status);
  });
  return server;
}

/** One request, by path (see the module comment); never throws for a request, never rejects. */
function serveRequest(front: HttpFront, req: IncomingMessage, res: ServerResponse): void {
  front.preAuth.watch(req, res);
  const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
  const refused = front.hostPolicy.refusal(req.headers.host);
  if (refused !== undefined) {
    front.logger.debug({ remote: req.socket.remoteAddress, host: String(req.headers.host).slice(0, 100) }, 'request refused: Host not allowed');
    refuseHost(res, path, refused);
    return;
  }
  if (path === '/mcp') {
    void front.mcp.handle(req, res); // never rejects
    return;
  }
  if (path === '/status' || path.startsWith('/status/')) {
    void front.status.handle(req, res, path); // never rejects
    return;
  }
  if (path === '/metrics' && front.metrics !== undefined) {
    const authenticate = (authorization: string | undefined): boolean => {
      const ok = front.tokens.authenticate(authorization, 'caller')?.role === 'caller';
      if (ok) front.preAuth.authenticated(req.socket); // a scraper's keep-alive connection leaves the pre-auth accounting
      return ok;
    };
    void serveMetrics(req, res, { metrics: front.metrics, authenticate, limiter: front.limiter, logger: front.logger }); // never rejects
    return;
  }
  if (path === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
    const body = JSON.stringify({ ok: true, hosts: front.router.hosts().length, tools: front.router.tools().length });
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  if (answerOAuthDiscovery(req, res, path)) return;
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: 'not found' }));
}
