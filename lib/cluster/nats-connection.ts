// The NATS connection of cluster mode: named after the instance (visible in the server's connection list),
// reconnecting forever, every state change logged, and a `reconnected` signal (after a reconnect the
// caches cannot know what they missed, so they drop everything).
import { connect, type NatsConnection } from '@nats-io/transport-node';
import Emittery from 'emittery';
import type { Logger } from '../logger';

export interface ConnectionEvents {
  reconnected: undefined;
  disconnected: undefined;
}

export interface ClusterConnection {
  nc: NatsConnection;
  events: Emittery<ConnectionEvents>;
  /** False between a disconnect and the next reconnect. */
  isConnected(): boolean;
  /** Lets in-flight messages finish, then closes. */
  drain(): Promise<void>;
  /** Closes at once, whatever is in flight (a leave that could not finish). */
  close(): Promise<void>;
}

export async function connectNats(deps: {
  url: string;
  instanceId: string;
  logger: Logger;
}): Promise<ClusterConnection> {
  const log = deps.logger.child({ component: 'ClusterConnection' });
  const nc = await connect({
    servers: deps.url.split(',').map((server) => server.trim()),
    name: `marketplace-${deps.instanceId}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: 5_000,
    // Without it every request builds two Error objects (stack traces) up front, in case it fails: ~4% of a
    // forwarding instance's busy time (bench/README.md, cluster profile). Our failures are logged by message.
    noAsyncTraces: true,
  });
  log.info(`Connected to NATS ${nc.getServer()} as ${deps.instanceId}`);
  const events = new Emittery<ConnectionEvents>();
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      switch (status.type) {
        case 'disconnect':
          connected = false;
          log.warn(`Disconnected from NATS ${status.server}`);
          await events.emit('disconnected');
          break;
        case 'reconnect':
          connected = true;
          log.info(`Reconnected to NATS ${status.server}`);
          await events.emit('reconnected');
          break;
        case 'error':
          log.warn({ err: status.error }, 'NATS reported an error');
          break;
        case 'staleConnection':
        case 'slowConsumer':
        case 'ldm':
          log.warn(`NATS connection: ${status.type}`);
          break;
        default:
          log.debug(`NATS connection: ${status.type}`);
      }
    }
  })().catch((err: unknown) => log.error({ err }, 'NATS status listener failed'));
  void nc.closed().then((err) => {
    if (err) log.error({ err }, 'NATS connection closed with an error');
    else log.info('NATS connection closed');
  });
  return {
    nc,
    events,
    isConnected: () => connected && !nc.isClosed(),
    async drain() {
      if (!nc.isClosed()) await nc.drain();
    },
    async close() {
      if (!nc.isClosed()) await nc.close();
    },
  };
}
