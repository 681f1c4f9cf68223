/**
 * `headerOf` (endpoint/request-header.ts) gives what `req.headers` gives for `Host`, `Origin` and
 * `Authorization`, read from `req.rawHeaders`: a real node:http server on 127.0.0.1:0 and raw upgrade
 * requests over TCP (they can repeat headers and spell names in any case).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { headerOf, type RawHeaderName } from '../src/endpoint/request-header.js';

const NAMES: readonly RawHeaderName[] = ['host', 'authorization', 'origin'];

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Seen {
  /** `headerOf` before anything read `req.headers` (so it cannot have used the built object). */
  raw: Record<string, string | undefined>;
  /** `req.headers` afterwards, for the same names. */
  built: Record<string, string | undefined>;
}

/** Send one upgrade request with these header lines (after the request line) and report what the server read. */
async function upgradeWith(lines: readonly string[]): Promise<Seen> {
  let seen: ((value: Seen) => void) | undefined;
  const result = new Promise<Seen>((resolve) => (seen = resolve));
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket) => {
    const raw = Object.fromEntries(NAMES.map((name) => [name, headerOf(req, name)]));
    const built = Object.fromEntries(NAMES.map((name) => [name, req.headers[name]]));
    socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    seen!({ raw, built });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1', () => socket.end(['GET / HTTP/1.1', 'Connection: Upgrade', 'Upgrade: websocket', ...lines, '', ''].join('\r\n')));
  socket.on('error', () => {});
  socket.resume();
  return result;
}

describe('headerOf: Host, Origin and Authorization from rawHeaders, as req.headers gives them', () => {
  it('reads single headers whatever the case of their names', async () => {
    const { raw, built } = await upgradeWith(['hOsT: 127.0.0.1:9', 'AUTHORIZATION: Bearer abc', 'Origin: https://a.example']);
    expect(raw).toEqual({ host: '127.0.0.1:9', authorization: 'Bearer abc', origin: 'https://a.example' });
    expect(raw).toEqual(built);
  });

  it('keeps the first Host and Authorization and joins repeated Origins with ", "', async () => {
    const { raw, built } = await upgradeWith([
      'Host: first.example',
      'Authorization: Bearer first',
      'origin: https://one.example',
      'Host: second.example',
      'authorization: Bearer second',
      'ORIGIN: https://two.example',
    ]);
    expect(raw).toEqual({ host: 'first.example', authorization: 'Bearer first', origin: 'https://one.example, https://two.example' });
    expect(raw).toEqual(built);
  });

  it('is undefined for an absent header and ignores names that only begin or end alike', async () => {
    const { raw, built } = await upgradeWith(['Host: 127.0.0.1', 'Hostx: no', 'X-Origin: no', 'Authorizatio: no', 'Origin-Agent-Cluster: ?1']);
    expect(raw).toEqual({ host: '127.0.0.1', authorization: undefined, origin: undefined });
    expect(raw).toEqual(built);
  });

  it('gives an empty value as the empty string', async () => {
    const { raw, built } = await upgradeWith(['Host: 127.0.0.1', 'Authorization:', 'Origin:']);
    expect(raw).toEqual({ host: '127.0.0.1', authorization: '', origin: '' });
    expect(raw).toEqual(built);
  });
});
