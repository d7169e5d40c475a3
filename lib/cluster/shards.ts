// Pure shard arithmetic: which shard a product lives in, how many shards an instance may hold, and the
// order in which an instance prefers shards (rendezvous hashing, so a rejoining instance tends to get the
// same shards back and instances do not all race for shard 0 first).
import crypto from 'node:crypto';

export function shardOf(productId: number, shards: number): number {
  if (!Number.isSafeInteger(productId) || productId < 0) throw new RangeError(`bad product id ${productId}`);
  return productId % shards;
}

/** At most this many shards per live member; their sum covers every shard. */
export function fairShare(shards: number, members: number): number {
  return Math.ceil(shards / Math.max(1, members));
}

function score(instanceId: string, shard: number): number {
  return crypto.createHash('sha1').update(`${instanceId}/${shard}`).digest().readUInt32BE(0);
}

/** Every shard, most preferred by `instanceId` first. */
export function preferenceOrder(instanceId: string, shards: number): number[] {
  return Array.from({ length: shards }, (_, shard) => shard)
    .map((shard) => ({ shard, score: score(instanceId, shard) }))
    .sort((a, b) => b.score - a.score || a.shard - b.shard)
    .map(({ shard }) => shard);
}

export const shardKey = (shard: number) => `shard-${shard}`;

export function shardFromKey(key: string): number | null {
  const match = /^shard-(\d+)$/.exec(key);
  return match ? Number(match[1]) : null;
}
