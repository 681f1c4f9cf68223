/**
 * Advertise storms (issue 11), reusable by the soak run and the abuse tests. Each runs as an
 * authenticated host (its own token) against a server URL for a bounded time, then closes its
 * socket and returns what it did and what the server answered.
 * - `schemaStorm`: advertise after advertise, every tool with a schema never seen before (each
 *   frame about 370 KiB with the defaults), up to `inflight` advertises unanswered at once;
 *   reconnects when the server closes it.
 * - `bigAdvertise`: one advertise of `entries` empty entries (2,000,000: a 5.7 MiB frame); resolves
 *   with the reply's size and counts, or the close code.
 */
import { once } from 'node:events';
import { WebSocket } from 'ws';

/** What a storm did and how the server answered. */
export interface StormCounts {
  /** `advertise` frames sent, and answered with `advertised`. */
  advertises: number;
  answered: number;
  /** Tools sent in all advertises; accepted and rejected in the replies (listed plus `moreRejected`). */
  toolsSent: number;
  accepted: number;
  rejected: number;
  /** Rejections whose reason is the host's schema compile budget. */
  budgetRefused: number;
  /** Connections opened, and closes by code. */
  connections: number;
  closes: Record<string, number>;
  bytesSent: number;
}

export interface SchemaStormOptions {
  url: string;
  token: string;
  /** How long to storm, ms. */
  durationMs: number;
  /** Tools per advertise; default 256. */
  tools?: number;
  /** Properties per tool schema; default 20 (about 1.4 KiB of schema). */
  properties?: number;
  /** Advertises sent before waiting for an answer; default 2. */
  inflight?: number;
}

let novel = 0;

/** A tool schema no one has advertised before (a fresh `description` in every property). */
function novelSchema(properties: number): Record<string, unknown> {
  const n = novel++;
  const props: Record<string, unknown> = {};
  for (let p = 0; p < properties; p++) {
    props[`field_${p}`] =
      p % 4 === 0 ? { type: 'integer', minimum: p, description: `storm ${n}.${p}` } : { type: 'string', maxLength: 100 + p, description: `storm ${n}.${p}` };
  }
  return { type: 'object', properties: props, required: ['field_0'], additionalProperties: false };
}

/** Open a host connection and say hello; resolves once `welcome` came. */
async function connect(url: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, maxPayload: 64 * 1024 * 1024 });
  ws.on('error', () => {});
  await once(ws, 'open');
  const welcome = new Promise<void>((resolve, reject) => {
    ws.once('message', () => resolve());
    ws.once('close', () => reject(new Error('closed before welcome')));
  });
  ws.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'toolwire storm' }));
  await welcome;
  return ws;
}

/** Storm `url` with advertises of novel schemas for `durationMs`. Never rejects. */
export async function schemaStorm(options: SchemaStormOptions): Promise<StormCounts> {
  const tools = options.tools ?? 256;
  const properties = options.properties ?? 20;
  const inflight = options.inflight ?? 2;
  const counts: StormCounts = { advertises: 0, answered: 0, toolsSent: 0, accepted: 0, rejected: 0, budgetRefused: 0, connections: 0, closes: {}, bytesSent: 0 };
  const until = Date.now() + options.durationMs;
  while (Date.now() < until) {
    let ws: WebSocket;
    try {
      ws = await connect(options.url, options.token);
    } catch {
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    counts.connections++;
    await new Promise<void>((resolve) => {
      let outstanding = 0;
      const stop = setTimeout(() => ws.close(1000), Math.max(0, until - Date.now()));
      const send = (): void => {
        while (outstanding < inflight && ws.readyState === WebSocket.OPEN && Date.now() < until) {
          const frame = JSON.stringify({
            type: 'advertise',
            tools: Array.from({ length: tools }, (_, i) => ({ name: `storm_${i}`, inputSchema: novelSchema(properties) })),
          });
          ws.send(frame);
          outstanding++;
          counts.advertises++;
          counts.toolsSent += tools;
          counts.bytesSent += frame.length;
        }
      };
      ws.on('message', (data: Buffer) => {
        const reply = JSON.parse(data.toString('utf8')) as { type?: string; accepted?: unknown[]; rejected?: { reason: string }[]; moreRejected?: number };
        if (reply.type !== 'advertised') return;
        outstanding--;
        counts.answered++;
        counts.accepted += reply.accepted?.length ?? 0;
        counts.rejected += (reply.rejected?.length ?? 0) + (reply.moreRejected ?? 0);
        counts.budgetRefused += (reply.rejected ?? []).filter((r) => r.reason.includes('compile budget')).length;
        send();
      });
      ws.on('close', (code) => {
        clearTimeout(stop);
        counts.closes[code] = (counts.closes[code] ?? 0) + 1;
        resolve();
      });
      send();
    });
  }
  return counts;
}

/** The outcome of one big advertise: the reply (its size in bytes, counts), or the close code. */
export interface BigAdvertiseOutcome {
  frameBytes: number;
  replyBytes?: number;
  accepted?: number;
  listed?: number;
  moreRejected?: number;
  closeCode?: number;
  ms: number;
}

/** Send one advertise of `entries` empty entries as host `token`; resolves with the answer. Never rejects. */
export async function bigAdvertise(url: string, token: string, entries = 2_000_000): Promise<BigAdvertiseOutcome> {
  const ws = await connect(url, token);
  const frame = `{"type":"advertise","tools":[${Array(entries).fill('{}').join(',')}]}`;
  const began = performance.now();
  const outcome = await new Promise<BigAdvertiseOutcome>((resolve) => {
    ws.once('message', (data: Buffer) => {
      const reply = JSON.parse(data.toString('utf8')) as { accepted: unknown[]; rejected: unknown[]; moreRejected?: number };
      resolve({
        frameBytes: frame.length,
        replyBytes: data.length,
        accepted: reply.accepted.length,
        listed: reply.rejected.length,
        ...(reply.moreRejected !== undefined && { moreRejected: reply.moreRejected }),
        ms: performance.now() - began,
      });
    });
    ws.once('close', (code) => resolve({ frameBytes: frame.length, closeCode: code, ms: performance.now() - began }));
    ws.send(frame);
  });
  ws.close(1000);
  return outcome;
}
