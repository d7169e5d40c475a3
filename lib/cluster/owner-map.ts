// Every shard's owner as the shards bucket last said, learnt from a KV watch on that bucket (JetStream's own
// change feed: a claim and every renewal is a PUT of `{ instanceId, incarnation }` under `shard-<n>`). The forwarder uses it
// only to put the requests for several shards of one owner into one message; it is a hint, never the truth:
// a released lease (its message removed) and an expired one (the bucket's max_age) leave no event, so an
// entry older than the lease TTL counts as unknown, and the owner itself refuses what it no longer owns.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from '../logger';
import { shardFromKey } from './shards';

interface Entry {
  instanceId: string;
  /** The process holding the lease: `<instanceId>.<incarnation>`, the token of its own subject (forwarding.ts). */
  address: string;
  /** When the server stored the claim or renewal (its clock). */
  at: number;
}

export interface OwnerMapDeps {
  kv: KV;
  ttlMs: number;
  logger: Logger;
  /** Pause before watching again after the watch ended (a NATS restart recreates the bucket). */
  rewatchMs?: number;
  now?: () => number;
}

/** One process of the cluster: its instance id and the incarnation its leases carry (ownership.ts). */
export const processAddress = (instanceId: string, incarnation: string) => `${instanceId}.${incarnation}`;

export function createOwnerMap(deps: OwnerMapDeps) {
  const log = deps.logger.child({ component: 'ClusterOwnerMap' });
  const now = deps.now ?? Date.now;
  const owners = new Map<number, Entry>();
  let watcher: Awaited<ReturnType<KV['watch']>> | null = null;
  let stopped = true;
  let running: Promise<void> | null = null;

  /** The shard's entry, if its claim or renewal was seen within the lease TTL. */
  function live(shard: number): Entry | null {
    const entry = owners.get(shard);
    if (!entry) return null;
    if (now() - entry.at >= deps.ttlMs) {
      owners.delete(shard);
      return null;
    }
    return entry;
  }

  function apply(entry: KvWatchEntry): void {
    const shard = shardFromKey(entry.key);
    if (shard === null) return;
    if (entry.operation !== 'PUT') {
      owners.delete(shard);
      return;
    }
    try {
      const { instanceId, incarnation } = entry.json<{ instanceId: string; incarnation: string }>();
      if (typeof instanceId === 'string' && typeof incarnation === 'string')
        owners.set(shard, {
          instanceId,
          address: processAddress(instanceId, incarnation),
          at: entry.created.getTime(),
        });
      else owners.delete(shard);
    } catch {
      owners.delete(shard);
    }
  }

  async function watchLoop(): Promise<void> {
    while (!stopped) {
      try {
        watcher = await deps.kv.watch();
        if (stopped) watcher.stop();
        for await (const entry of watcher) apply(entry);
      } catch (err) {
        log.debug({ err }, 'Watching the shards bucket failed');
      }
      watcher = null;
      if (stopped) return;
      // What was learnt may be outdated now: forget it (requests go per shard meanwhile).
      owners.clear();
      await new Promise((resolve) => setTimeout(resolve, deps.rewatchMs ?? 1000));
    }
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      running = watchLoop();
    },

    /** After a reconnect the watch may have missed changes: start it afresh. */
    rewatch(): void {
      owners.clear();
      watcher?.stop();
    },

    /** The instance that held `shard`'s lease at its last claim or renewal, if that was within the lease TTL. */
    ownerOf(shard: number): string | null {
      return live(shard)?.instanceId ?? null;
    },

    /**
     * The process that held it (`processAddress`): where the forwarder sends. Not the instance id: a replacement
     * started under a stalled process's id shares the id, and a message both received would run on both.
     */
    addressOf(shard: number): string | null {
      return live(shard)?.address ?? null;
    },

    /** A process nobody answers for (gone): its shards are unknown until their next claim is seen. */
    forget(address: string): void {
      for (const [shard, entry] of owners) if (entry.address === address) owners.delete(shard);
    },

    async stop(): Promise<void> {
      stopped = true;
      watcher?.stop();
      await running;
    },
  };
}

export type OwnerMap = ReturnType<typeof createOwnerMap>;
