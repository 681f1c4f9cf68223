/**
 * `GET /metrics` on the server's port (issue 16): the OpenMetrics text of the server's metrics, for
 * callers only (`Authorization: Bearer <caller token>`). A missing or wrong token is counted by the
 * failed-authentication limiter and answered 401 (429 with `Retry-After` from an address that failed
 * too often), as the MCP door answers; the token is never logged. A separate listener without a
 * token (`toolwire serve --metrics-listen`) uses {@link writeMetrics} directly.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AuthLimiter, retryAfterSeconds, tooManyFailures } from '../auth/limiter.js';
import type { Logger } from '../options.js';
import type { ServerMetrics } from './metrics.js';

/** What {@link serveMetrics} needs. */
export interface MetricsEndpointDeps {
  metrics: ServerMetrics;
  authenticate: (authorization: string | undefined) => boolean;
  limiter: AuthLimiter;
  logger: Logger;
}

/** Answer one request to `/metrics` (GET or HEAD, caller token). Never rejects. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, deps: MetricsEndpointDeps): Promise<void> {
  const remote = req.socket.remoteAddress;
  if (!deps.authenticate(req.headers.authorization)) {
    const limit = deps.limiter.check(remote);
    deps.limiter.fail(remote);
    deps.logger.warn({ remote }, '/metrics refused: not authenticated');
    if (limit.blocked) return plain(res, 429, tooManyFailures(limit.retryAfterMs), { 'retry-after': String(retryAfterSeconds(limit.retryAfterMs)) });
    return plain(res, 401, 'unauthorized', { 'www-authenticate': 'Bearer' });
  }
  await writeMetrics(req, res, deps.metrics, deps.logger);
}

/** Write the metrics text (GET, HEAD) or 405 (other methods). Never rejects. */
export async function writeMetrics(req: IncomingMessage, res: ServerResponse, metrics: ServerMetrics, logger: Logger): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
  try {
    const text = await metrics.metrics();
    res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  } catch (error) {
    logger.error({ err: error }, 'cannot render /metrics');
    if (!res.headersSent) plain(res, 500, 'internal error');
    else res.destroy();
  }
}

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(`${text}\n`);
}
