// Cluster mode (only when NATS_URL is set): one NATS connection, shard ownership through KV leases,
// forwarding to a shard's owner, and app events. What the app uses:
//   const cluster = await createCluster({ config: config.cluster, logger });
//   cluster.serve(handler); cluster.onShardAcquired(...); cluster.onShardLost(...); cluster.onReconnected(...);
//   await cluster.start();            // joins; shards arrive through onShardAcquired
//   cluster.isOwner(productId) / cluster.request(productId, payload) / publish / subscribe
//   await cluster.close();            // hands every shard over at once (graceful shutdown)
import crypto from 'node:crypto';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { ClusterConfig } from '../config';
import type { Logger } from '../logger';
import { createClusterEvents, type ClusterEventHandler } from './cluster-events';
import { createForwarder, type ShardHandler } from './forwarding';
import { connectNats } from './nats-connection';
import { createOwnerMap, processAddress, type OwnerMap } from './owner-map';
import { createOwnership } from './ownership';
import { shardOf } from './shards';

export type { ClusterEvent, ClusterEventHandler } from './cluster-events';
export type { ShardHandler, ShardRequest } from './forwarding';

type Listener<T> = (value: T) => void | Promise<void>;

export const bucketNames = (prefix: string) => ({ shards: `${prefix}-shards`, members: `${prefix}-members` });

async function openBucket(kvm: Kvm, name: string, ttlMs: number, log: Logger): Promise<KV> {
  // File storage: the leases outlive a NATS restart, with their ages, so a holder that still trusts its lease
  // (for its TTL less one renewal period) is never joined by a second holder claiming a wiped key; its next
  // compare-and-set simply succeeds. Memory buckets were gone after every NATS restart.
  const kv = await kvm.create(name, { ttl: ttlMs, history: 1, storage: StorageType.File });
  const status = await kv.status();
  if (status.ttl !== ttlMs) {
    throw new Error(
      `KV bucket ${name} has a lease TTL of ${status.ttl} ms, this instance is configured with ${ttlMs} ms: every instance of a cluster needs the same CLUSTER_LEASE_TTL_MS`,
    );
  }
  // An existing bucket is used as it is (a stream's storage cannot change): one made in memory by an older
  // version loses its leases on a NATS restart, and is made again on file after one.
  if (status.storage !== StorageType.File) {
    log.warn(
      `KV bucket ${name} keeps its leases in memory: a NATS restart wipes them while their holders trust them`,
    );
  }
  return kv;
}

export async function createCluster(deps: { config: ClusterConfig; logger: Logger }) {
  const { config } = deps;
  const log = deps.logger.child({ component: 'Cluster' });
  const connection = await connectNats({
    url: config.natsUrl,
    instanceId: config.instanceId,
    logger: deps.logger,
  });
  const { nc } = connection;
  // This process, told apart from any other that runs or ran under the same instance id (a replacement).
  const incarnation = crypto.randomUUID();
  const address = processAddress(config.instanceId, incarnation);
  let ownership: ReturnType<typeof createOwnership>;
  let ownerMap: OwnerMap;
  try {
    const timeout = Math.max(config.renewMs, 1000);
    const kvm = new Kvm(jetstream(nc, { timeout }));
    const jsm = await jetstreamManager(nc, { timeout });
    const names = bucketNames(config.prefix);
    const openBuckets = () =>
      Promise.all([
        openBucket(kvm, names.shards, config.leaseTtlMs, log),
        openBucket(kvm, names.members, config.leaseTtlMs, log),
      ]);
    const [shardsKv, membersKv] = await openBuckets();
    // Who owns which shard, for batching per owner; watched afresh after the buckets are recreated.
    ownerMap = createOwnerMap({ kv: shardsKv, ttlMs: config.leaseTtlMs, logger: deps.logger });
    ownership = createOwnership({
      recreateBuckets: () => openBuckets().then(() => ownerMap.rewatch()),
      shardsKv,
      membersKv,
      jsm,
      buckets: names,
      config,
      incarnation,
      logger: deps.logger,
    });
  } catch (err) {
    await nc.close();
    throw err;
  }
  const shardOfProduct = (productId: number) => shardOf(productId, config.shards);
  const forwarder = createForwarder({
    nc,
    prefix: config.prefix,
    instanceId: config.instanceId,
    address,
    requestTimeoutMs: config.requestTimeoutMs,
    // Balancing runs every half renewal period: a released shard is claimed within that (plus the claim).
    handoverWaitMs: Math.min(config.requestTimeoutMs, Math.ceil(config.renewMs * 0.6)),
    retryAfterSeconds: Math.ceil((config.leaseTtlMs + config.renewMs) / 1000),
    shardOf: shardOfProduct,
    owns: ownership.owns,
    connected: connection.isConnected,
    ownerOf: ownerMap.addressOf,
    ownerGone: ownerMap.forget,
    logger: deps.logger,
  });
  connection.events.on('reconnected', () => ownerMap.rewatch());
  const events = createClusterEvents({
    nc,
    prefix: config.prefix,
    instanceId: config.instanceId,
    address,
    logger: deps.logger,
  });
  // The forwarder's own listeners come first: a shard's subject is answered exactly while it is owned.
  ownership.events.on('acquired', (shard) =>
    forwarder.open(shard).catch((err: unknown) => log.warn({ err }, `Serving shard ${shard} failed`)),
  );
  ownership.events.on('lost', (shard) => forwarder.close(shard));
  let closed = false;

  return {
    instanceId: config.instanceId,
    /** This process: its instance id and incarnation, the token of its own subject (`<prefix>.owner.<address>`). */
    address,
    shards: config.shards,
    /** Joins the cluster: its own subject and the owner map first, then membership and its fair share of shards. */
    async start(): Promise<void> {
      ownerMap.start();
      try {
        await forwarder.listen();
        await ownership.start();
      } catch (err) {
        await ownerMap.stop();
        throw err;
      }
    },
    /** The handler that answers requests for the shards this instance owns. */
    serve(handler: ShardHandler): void {
      forwarder.serve(handler);
    },
    onShardAcquired(listener: Listener<number>): () => void {
      return ownership.events.on('acquired', listener);
    },
    /** The app stops the shard's actors here; the key is deleted (or lost) once listeners are done. */
    onShardLost(listener: Listener<number>): () => void {
      return ownership.events.on('lost', listener);
    },
    /** After NATS comes back: whatever was published meanwhile was missed. */
    onReconnected(listener: Listener<void>): () => void {
      return connection.events.on('reconnected', () => listener());
    },
    shardOf: shardOfProduct,
    isOwner: (productId: number) => ownership.owns(shardOfProduct(productId)),
    ownedShards: () => ownership.ownedShards().sort((a, b) => a - b),
    /** The owner map's hint for `shard` (null: unknown or outdated); the owner itself decides. */
    ownerOf: (shard: number) => ownerMap.ownerOf(shard),
    request: forwarder.request,
    publish: events.publish,
    subscribe: <P = unknown>(name: string, handler: ClusterEventHandler<P>) =>
      events.subscribe(name, handler),
    /**
     * Leaves: no new requests are served, answers in flight go out, then every lease is deleted at once. Never
     * rejects, and takes at most CLUSTER_REQUEST_TIMEOUT_MS: with NATS away or stalled the leave cannot finish, so
     * the connection is closed as it is and the leases run out on the server within their TTL (the shutdown goes on
     * to flush the inventory and close the database).
     */
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const leave = (async () => {
        await ownership.stop();
        await forwarder.idle();
        await ownerMap.stop();
        await connection.drain();
      })();
      let timer: NodeJS.Timeout | undefined;
      const outOfTime = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.requestTimeoutMs);
      });
      const outcome = await Promise.race([leave.then(() => 'left' as const), outOfTime]).catch(
        (err: unknown) => err,
      );
      clearTimeout(timer);
      if (outcome === 'left') {
        log.info(`Left the cluster as ${config.instanceId}`);
        return;
      }
      leave.catch(() => undefined); // still running, or failed: its end is not waited for
      log.warn(
        { err: outcome === 'timeout' ? undefined : outcome },
        `Leaving the cluster did not finish${outcome === 'timeout' ? ` in ${config.requestTimeoutMs} ms` : ''} (NATS away?): ` +
          `closing the connection; this instance's leases run out on the server within ${config.leaseTtlMs} ms`,
      );
      await connection
        .close()
        .catch((err: unknown) => log.warn({ err }, 'Closing the NATS connection failed'));
    },
  };
}

export type Cluster = Awaited<ReturnType<typeof createCluster>>;

/** Deletes a cluster's buckets (tests clean up after their private prefixes). */
export async function destroyClusterBuckets(natsUrl: string, prefix: string): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    for (const name of Object.values(bucketNames(prefix))) {
      await jsm.streams.delete(`KV_${name}`).catch(() => false);
    }
  } finally {
    await nc.close();
  }
}
