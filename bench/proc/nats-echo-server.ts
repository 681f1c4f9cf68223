/**
 * Bench floor for the cluster scenario (bench/cluster.ts): two processes on the same NATS, with no
 * toolwire code. `BENCH_NATS_ROLE=answer` answers every message on `bench.floor.call` with the
 * request's JSON (as a host's echo tool would); `BENCH_NATS_ROLE=call` runs the load: each call
 * publishes the JSON of the input with a reply subject of its own under one wildcard subscription
 * and awaits the answer — the hops a call across nodes adds (caller's node → NATS → host's node →
 * NATS → caller's node), without the host.
 */
import { connect } from '@nats-io/transport-node';
import { makeInput, runSegment } from '../load.js';
import { processInfo, send, serve, settledRssKiB } from './ipc.js';

const nc = await connect({ servers: process.env.BENCH_NATS!, name: `bench floor ${process.env.BENCH_NATS_ROLE}` });
const encoder = new TextEncoder();
const pending = new Map<string, (data: Uint8Array) => void>();
let next = 0;
if (process.env.BENCH_NATS_ROLE === 'answer') {
  nc.subscribe('bench.floor.call', {
    callback: (_, m) => {
      if (m.reply) nc.publish(m.reply, m.data);
    },
  });
} else {
  nc.subscribe('bench.floor.reply.*', {
    callback: (_, m) => {
      const resolve = pending.get(m.subject);
      pending.delete(m.subject);
      resolve?.(m.data);
    },
  });
}
await nc.flush();

serve(async (command) => {
  switch (command.cmd) {
    case 'load': {
      const data = encoder.encode(JSON.stringify(makeInput(Number(command.bytes))));
      const segment = await runSegment(
        Number(command.concurrency),
        Number(command.count),
        async () => {
          const reply = `bench.floor.reply.${(next++).toString(36)}`;
          const answer = await new Promise<Uint8Array>((resolve) => {
            pending.set(reply, resolve);
            nc.publish('bench.floor.call', data, { reply });
          });
          return answer.length === data.length ? undefined : `answer of ${answer.length} bytes`;
        },
        command.gc !== false,
      );
      return { segment };
    }
    case 'rss':
      return { rssKiB: settledRssKiB() };
    case 'info':
      return processInfo();
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
});
send({ event: 'ready' });
