/**
 * `--metrics-listen HOST:PORT` of `toolwire serve` and `toolwire host` (issue 16): a plain HTTP
 * listener of its own that answers `GET /metrics` with the process's metrics and nothing else (404),
 * without a token — bind it to an address only your Prometheus reaches (default: loopback).
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a scrape returns: the text and its content type. */
export type Scrape = () => Promise<{ contentType: string; text: string } | undefined>;

/** A running metrics listener. */
export interface MetricsListener {
  /** E.g. `http://127.0.0.1:9464/metrics`. */
  url: string;
  /** Stop listening and close its connections. */
  close(): Promise<void>;
}

/** Listen on `address` for `GET /metrics`. Rejects with the listen error (e.g. `EADDRINUSE`). */
export async function listenMetrics(address: { host: string; port: number }, scrape: Scrape): Promise<MetricsListener> {
  const server = createServer((req, res) => void answer(req, res, scrape));
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => undefined); // after listening: errors concern one connection only
  const bound = server.address() as AddressInfo;
  const host = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${host}:${bound.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, scrape: Scrape): Promise<void> {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path !== '/metrics') return end(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return end(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
  try {
    const scraped = await scrape();
    if (scraped === undefined) return end(res, 404, 'text/plain; charset=utf-8', 'metrics are off\n');
    end(res, 200, scraped.contentType, req.method === 'HEAD' ? '' : scraped.text);
  } catch {
    if (!res.headersSent) end(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
    else res.destroy();
  }
}

function end(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}
