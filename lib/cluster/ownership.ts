// Shard ownership through KV leases. Membership is a lease per instance in the members bucket (its
// presence is the whole membership protocol); each shard is a lease in the shards bucket held by exactly
// one instance. Every renewal period an instance renews what it holds, and twice per period it balances:
// with M live members it holds at most ceil(shards / M), releasing its least preferred shards when members
// join and claiming free shards (its most preferred first) when it is below its share, so a dead instance's
// shards (expired leases) are taken within about TTL + half a period, and a rejoining one gets shards back.
import Emittery from 'emittery';
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { ClusterConfig } from '../config';
import type { Logger } from '../logger';
import { bucketState, createLeaseTable } from './lease-table';
import { fairShare, preferenceOrder, shardFromKey, shardKey } from './shards';

export interface OwnershipEvents {
  acquired: number;
  lost: number;
}

export interface OwnershipDeps {
  shardsKv: KV;
  membersKv: KV;
  jsm: JetStreamManager;
  buckets: { shards: string; members: string };
  /** Creates the buckets again (gone if NATS restarted with another store, or someone deleted them). */
  recreateBuckets(): Promise<void>;
  config: Pick<ClusterConfig, 'instanceId' | 'shards' | 'leaseTtlMs' | 'renewMs'>;
  /** This process among those that ever ran under its instance id (a random UUID per start). */
  incarnation: string;
  logger: Logger;
}

export function createOwnership(deps: OwnershipDeps) {
  const { shardsKv, membersKv, jsm, buckets } = deps;
  const { instanceId, shards, leaseTtlMs, renewMs } = deps.config;
  const log = deps.logger.child({ component: 'ClusterOwnership' });
  const events = new Emittery<OwnershipEvents>();
  const preference = preferenceOrder(instanceId, shards);
  const rank = new Map(preference.map((shard, index) => [shard, index]));
  // The leases' value names this process, not only its instance id (which a replacement started under the same id
  // shares): a lease table adopts or takes back a key holding its own value (lease-table.ts), and must never take
  // what another process holds, a former one's leftover or a replacement's claim.
  // It also says how this process maps products to shards: a member with another count is refused at start.
  const value = JSON.stringify({ instanceId, incarnation: deps.incarnation, shards });
  /** Shards being handed over: no longer served, their key not yet deleted. */
  const releasing = new Set<number>();
  /** Shards just claimed whose acquired listeners (subscription, app) are still running: not served yet. */
  const acquiring = new Set<number>();

  async function announce(event: keyof OwnershipEvents, shard: number): Promise<void> {
    try {
      await events.emit(event, shard);
    } catch (err) {
      log.error({ err }, `A shard ${event} listener failed (shard ${shard})`);
    }
  }

  const shardLeases = createLeaseTable({
    kv: shardsKv,
    jsm,
    bucket: buckets.shards,
    ttlMs: leaseTtlMs,
    renewMs,
    logger: log,
    onLost: (key) => {
      const shard = shardFromKey(key);
      return shard === null ? undefined : announce('lost', shard);
    },
  });
  // A lost membership lease is claimed again by the next balancing round; shards are leased on their own.
  const memberLeases = createLeaseTable({
    kv: membersKv,
    jsm,
    bucket: buckets.members,
    ttlMs: leaseTtlMs,
    renewMs,
    logger: log,
    onLost: () => undefined,
  });

  const owns = (shard: number) =>
    shardLeases.holds(shardKey(shard)) && !releasing.has(shard) && !acquiring.has(shard);

  function ownedShards(): number[] {
    return shardLeases
      .keys()
      .map(shardFromKey)
      .filter((shard): shard is number => shard !== null && owns(shard))
      .sort((a, b) => rank.get(a)! - rank.get(b)!);
  }

  /** Stops serving first, then deletes the key, so the next owner never overlaps with this one. */
  async function release(shard: number): Promise<void> {
    releasing.add(shard);
    try {
      await announce('lost', shard);
      await shardLeases.release(shardKey(shard));
    } finally {
      releasing.delete(shard);
    }
  }

  /** Whether a balancing round ran that was free to claim: it started at or after claimsFrom, as that stood at its end. */
  let claimableRoundRan = false;
  /** Waiting for the end of the next balancing round (stop() lets them all go). */
  const roundEnds = new Set<() => void>();
  const nextRoundEnd = () => new Promise<void>((resolve) => roundEnds.add(resolve));

  async function balanceOrRecreate(): Promise<void> {
    const startedAt = Date.now();
    try {
      await balance();
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
      log.warn('The lease buckets are gone (NATS restarted?): creating them again');
      await deps.recreateBuckets();
    } finally {
      // A round that found a bucket too young (keysOf) moved claimsFrom past its own start.
      if (startedAt >= claimsFrom) claimableRoundRan = true;
      for (const resolve of roundEnds) resolve();
      roundEnds.clear();
    }
  }

  /** No shard is claimed before this time (set when the lease buckets were made again). */
  let claimsFrom = 0;
  /** When each bucket's stream was created, as first seen. */
  const created = new Map<string, string>();

  /**
   * A bucket's live keys. One made again since it was last read (NATS lost its store, and some instance made it
   * again: this one or another) held every lease of the cluster, and each instance that held one still trusts it
   * for at most the lease TTL: no shard is claimed before that, or one could have two owners. An instance that
   * never saw the bucket before (it just started) cannot tell a new cluster's bucket from one made again, so it
   * claims nothing until the bucket is a lease TTL old (by this machine's clock against the server's creation
   * time): a new cluster's first instance waits that long once.
   */
  async function keysOf(bucket: string): Promise<string[]> {
    const state = await bucketState(jsm, bucket);
    const before = created.get(bucket);
    created.set(bucket, state.created);
    if (before !== undefined && before !== state.created) {
      log.warn(`Bucket ${bucket} was made again: no shard is claimed for ${leaseTtlMs} ms`);
      claimsFrom = Date.now() + leaseTtlMs;
    } else if (before === undefined) {
      // A clock behind the server's (a negative age) or an unreadable time waits the whole TTL.
      const age = Math.max(0, Date.now() - Date.parse(state.created)) || 0;
      if (age < leaseTtlMs) {
        log.info(`Bucket ${bucket} is ${age} ms old: no shard is claimed for ${leaseTtlMs - age} ms`);
        claimsFrom = Math.max(claimsFrom, Date.now() + leaseTtlMs - age);
      }
    }
    return state.keys;
  }

  async function balance(): Promise<void> {
    // Read first: a missing bucket shows here as StreamNotFound (a failed claim would hide the reason).
    const present = new Set(await keysOf(buckets.members));
    if (!memberLeases.holds(instanceId) && !(await memberLeases.claim(instanceId, value))) return;
    // A member, also while its key is missing from a recreated bucket (it is claimed again once its renewal fails).
    present.add(instanceId);
    const members = present.size;
    const share = fairShare(shards, members);
    const owned = ownedShards();
    if (owned.length > share) {
      const extra = owned.slice(share);
      log.info(`${members} members: handing over ${extra.length} shard(s) to keep ${share}`);
      await Promise.all(extra.map(release));
      return;
    }
    if (owned.length === share || stopped || Date.now() < claimsFrom) return;
    const taken = new Set(await keysOf(buckets.shards));
    // That read may be the one that found the shards bucket made again (only it, not the members bucket).
    if (Date.now() < claimsFrom || stopped) return;
    // Free, or holding what may be our own renewal applied after we lost the shard (the claim takes it back).
    // Free ones first: a leftover is often another instance's by now, and a failed claim wastes this round's slot.
    const isFree = (shard: number) => !taken.has(shardKey(shard));
    const claimable = [
      ...preference.filter((shard) => isFree(shard) && !releasing.has(shard)),
      ...preference.filter(
        (shard) => !isFree(shard) && shardLeases.mayHoldOurLeftover(shardKey(shard)) && !releasing.has(shard),
      ),
    ];
    const claimed = await Promise.all(
      claimable.slice(0, share - owned.length).map(async (shard) => {
        if (stopped) return null;
        acquiring.add(shard);
        try {
          if (!(await shardLeases.claim(shardKey(shard), value))) return null;
          await announce('acquired', shard);
          return shard;
        } finally {
          acquiring.delete(shard);
        }
      }),
    );
    const won = claimed.filter((shard) => shard !== null);
    if (won.length > 0)
      log.info(`Acquired ${won.length} shard(s); ${ownedShards().length} of ${shards} held`);
  }

  let stopped = true;
  const loops: Array<{ timer: NodeJS.Timeout | null; running: Promise<void> | null }> = [];

  /** Runs `work` every `periodMs`, never two at a time, logging (not throwing) its failures. */
  function every(periodMs: number, what: string, work: () => Promise<void>): void {
    const loop = { timer: null as NodeJS.Timeout | null, running: null as Promise<void> | null };
    loops.push(loop);
    const run = () => {
      loop.timer = null;
      if (stopped) return;
      const started = Date.now();
      loop.running = work()
        .catch((err: unknown) => log.warn({ err }, `${what} failed; trying again`))
        .finally(() => {
          loop.running = null;
          if (!stopped) loop.timer = setTimeout(run, Math.max(0, periodMs - (Date.now() - started)));
        });
    };
    run();
  }

  /**
   * Refuses to join members that map products to shards another way: with two shard counts one product's shard
   * has two owners, one under each count. Checked against the members alive now, before this instance claims its
   * membership and again after (below).
   */
  async function checkShardCount(): Promise<void> {
    for (const key of (await bucketState(jsm, buckets.members)).keys) {
      if (key === instanceId) continue;
      const entry = await membersKv.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      let theirs: unknown;
      try {
        theirs = entry.json<{ shards?: unknown }>().shards;
      } catch {
        continue;
      }
      if (typeof theirs === 'number' && theirs !== shards) {
        throw new Error(
          `Cluster member ${key} runs with CLUSTER_SHARDS=${theirs}, this instance with ${shards}: every instance of a cluster needs the same CLUSTER_SHARDS`,
        );
      }
    }
  }

  return {
    events,
    owns,
    ownedShards,
    /** Joins the cluster: registers as a member, then renews and balances every renewal period. */
    async start(): Promise<void> {
      await checkShardCount();
      if (!(await memberLeases.claim(instanceId, value))) {
        throw new Error(`Cluster member ${instanceId} already exists: instance ids must be unique`);
      }
      // Again, now that this member shows: of two instances starting together with different counts, each claims
      // before it reads, so the one that reads last sees the other (both may refuse). No shard is claimed before.
      try {
        await checkShardCount();
      } catch (err) {
        await memberLeases.release(instanceId);
        throw err;
      }
      stopped = false;
      every(renewMs, 'Renewing leases', () =>
        Promise.all([memberLeases.renewAll(), shardLeases.renewAll()]).then(() => undefined),
      );
      // Twice per renewal period: an expired owner's shards are noticed half a period sooner (two cheap reads).
      every(Math.max(50, Math.floor(renewMs / 2)), 'Balancing shards', balanceOrRecreate);
      // Resolves after the first balancing round that may claim: a first instance serves every shard before it
      // listens, also when the bucket was too young to claim from at first (keysOf).
      await loops[loops.length - 1].running;
      while (!stopped && !claimableRoundRan) await nextRoundEnd();
    },
    /** Leaves at once: stops serving every shard and deletes its keys and its membership. */
    async stop(): Promise<void> {
      stopped = true;
      for (const resolve of roundEnds) resolve();
      roundEnds.clear();
      shardLeases.stopRetrying();
      memberLeases.stopRetrying();
      for (const loop of loops) if (loop.timer) clearTimeout(loop.timer);
      await Promise.all(loops.map((loop) => loop.running));
      // Every key still in the table, also one whose renewal is overdue but not yet declared lost.
      const held = shardLeases.keys().map(shardFromKey);
      await Promise.all(held.filter((shard) => shard !== null).map(release));
      await memberLeases.release(instanceId);
    },
  };
}

export type Ownership = ReturnType<typeof createOwnership>;
