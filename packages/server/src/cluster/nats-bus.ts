/**
 * The {@link Bus} over a NATS connection (`@nats-io/transport-node`): credentials, TLS and reconnects
 * as configured; `connected` follows the connection's status events.
 */
import { readFile } from 'node:fs/promises';
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import type { Logger } from '../options.js';
import type { Bus, BusHandler } from './bus.js';
import type { ClusterConfig } from './options.js';

/** A connected bus, with what closing it needs. */
export interface NatsBus extends Bus {
  readonly connection: NatsConnection;
  /** Flush what was published, then close the connection. Never rejects. */
  close(): Promise<void>;
}

/**
 * Connect to the cluster's NATS servers. Rejects with the client's error when none can be reached
 * at start (later losses reconnect forever, every 1 s).
 */
export async function connectBus(config: ClusterConfig, logger: Logger): Promise<NatsBus> {
  const { credentials, tls } = config;
  const options: NodeConnectionOptions = {
    servers: config.nats,
    name: `toolwire ${config.name}/${config.node}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    waitOnFirstConnect: false,
  };
  if (credentials.token !== undefined) options.token = credentials.token;
  if (credentials.user !== undefined) options.user = credentials.user;
  if (credentials.pass !== undefined) options.pass = credentials.pass;
  if (credentials.credsFile !== undefined) options.authenticator = credsAuthenticator(await readFile(credentials.credsFile));
  if (tls !== undefined) options.tls = { ...(tls.ca && { caFile: tls.ca }), ...(tls.cert && { certFile: tls.cert }), ...(tls.key && { keyFile: tls.key }) };
  const nc = await connect(options);
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        connected = false;
        logger.warn({ server: status.server }, 'cluster: lost the NATS connection; reconnecting');
      } else if (status.type === 'reconnect') {
        connected = true;
        logger.info({ server: status.server }, 'cluster: NATS connection back');
      } else if (status.type === 'close') connected = false;
    }
  })().catch(() => undefined);
  return {
    connection: nc,
    get connected() {
      return connected && !nc.isClosed();
    },
    get maxPayload() {
      return nc.info?.max_payload ?? 1024 * 1024;
    },
    publish(subject: string, data: Uint8Array, reply?: string) {
      try {
        nc.publish(subject, data, reply === undefined ? undefined : { reply });
      } catch (error) {
        logger.debug({ err: error, subject }, 'cluster: publish failed');
      }
    },
    subscribe(subject: string, handler: BusHandler) {
      const sub = nc.subscribe(subject, {
        callback: (error, msg) => {
          if (error !== null) return void logger.warn({ err: error, subject }, 'cluster: subscription error');
          // A throw here would reach the NATS client's parser and end its reader for good (the node
          // would hear nothing more): a message its handler cannot take is dropped and logged.
          try {
            handler(msg.data, msg.reply, msg.subject);
          } catch (err) {
            logger.warn({ err, subject }, 'cluster: a message from NATS could not be handled; dropped');
          }
        },
      });
      return () => sub.unsubscribe();
    },
    async request(subject: string, data: Uint8Array, timeoutMs: number) {
      const msg = await nc.request(subject, data, { timeout: timeoutMs });
      return msg.data;
    },
    async close() {
      try {
        await nc.drain();
      } catch {
        await nc.close().catch(() => undefined);
      }
    },
  };
}
