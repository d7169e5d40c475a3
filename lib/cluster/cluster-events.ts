// App events across instances on `<prefix>.events.<name>`, each carrying the instance it came from. Every
// event reaches every subscriber, this instance's own included (marked `own`): the app decides what to skip. `own`
// is decided on the sending process (instance id and incarnation), not the instance id: a replacement started under
// a stalled process's id must not skip that process's changes, nor it the replacement's.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger';

export interface ClusterEvent<P = unknown> {
  name: string;
  payload: P;
  origin: string;
  own: boolean;
  /** ISO time of publication at the origin. */
  at: string;
}

export type ClusterEventHandler<P = unknown> = (event: ClusterEvent<P>) => void | Promise<void>;

const EVENT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function createClusterEvents(deps: {
  nc: NatsConnection;
  prefix: string;
  instanceId: string;
  /** This process (owner-map.ts's processAddress); the instance id by default. */
  address?: string;
  logger: Logger;
}) {
  const address = deps.address ?? deps.instanceId;
  const log = deps.logger.child({ component: 'ClusterEvents' });
  const subject = (name: string) => {
    if (!EVENT_NAME.test(name)) throw new TypeError(`Bad cluster event name: ${name}`);
    return `${deps.prefix}.events.${name}`;
  };

  return {
    /**
     * Publishes an event; never throws. While disconnected the client buffers it (and drops it on reconnecting:
     * the reconnect's `cachesStale` covers that); once the connection is closing (the instance leaves) it is
     * logged and dropped, so a change committed late in a shutdown cannot crash the process.
     */
    publish(name: string, payload: unknown): void {
      const to = subject(name);
      try {
        deps.nc.publish(
          to,
          JSON.stringify({
            name,
            payload,
            origin: deps.instanceId,
            sender: address,
            at: new Date().toISOString(),
          }),
        );
      } catch (err) {
        log.warn({ err }, `A ${name} event could not be published`);
      }
    },

    /**
     * Calls `handler` for every `name` event; resolves (to the unsubscribe function) once the server knows
     * the subscription, so no event published after that is missed.
     */
    async subscribe<P = unknown>(name: string, handler: ClusterEventHandler<P>): Promise<() => void> {
      const sub = deps.nc.subscribe(subject(name), {
        callback: (err, msg) => {
          if (err) {
            log.warn({ err }, `Subscription to ${name} events failed`);
            return;
          }
          let event: ClusterEvent<P>;
          try {
            const { sender, ...body } = msg.json<Omit<ClusterEvent<P>, 'own'> & { sender?: string }>();
            event = { ...body, own: sender === address };
          } catch (err) {
            log.warn({ err }, `Malformed ${name} event ignored`);
            return;
          }
          void Promise.resolve()
            .then(() => handler(event))
            .catch((failure: unknown) => log.error({ err: failure }, `A ${name} event handler failed`));
        },
      });
      await deps.nc.flush();
      return () => sub.unsubscribe();
    },
  };
}

export type ClusterEvents = ReturnType<typeof createClusterEvents>;
