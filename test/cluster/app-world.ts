// Service instances in this test process forming one cluster on one MariaDB database and the real NATS
// (app-cluster.test.ts and its edges): a file shares one world of two instances (starting them costs seconds),
// whose tests run serially, in their order.
import test, { type ExecutionContext } from 'ava';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from '../helpers/harness';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { destroyClusterBuckets } from '../../lib/cluster/cluster';
import { NATS_URL, uniquePrefix, until } from './cluster-fixtures';

export interface World {
  database: TestDatabase;
  prefix: string;
  apps: TestApp[];
  seller: TestMember;
  buyer: TestMember;
  admin: TestMember;
}

/** An instance of the world's cluster (16 shards unless `env` says otherwise). */
export function startInstance(
  world: Pick<World, 'database' | 'prefix'>,
  id: string,
  env: Record<string, string> = {},
): Promise<TestApp> {
  return startTestApp({
    database: world.database,
    env: { NATS_URL, CLUSTER_PREFIX: world.prefix, CLUSTER_INSTANCE_ID: id, CLUSTER_SHARDS: '16', ...env },
  });
}

/** Closes the world's instances, removes its cluster's buckets and drops its database. */
export async function closeWorld(world: Pick<World, 'apps' | 'prefix' | 'database'>): Promise<void> {
  await Promise.allSettled(world.apps.map((app) => app.close()));
  await destroyClusterBuckets(NATS_URL, world.prefix);
  await world.database.drop();
}

/** Two instances on one database, both holding 8 of the 16 shards, with a seller, a buyer and an admin. */
async function twoInstances(label: string): Promise<World> {
  const database = await createTestDatabase();
  const prefix = uniquePrefix(label);
  const apps = [await startInstance({ database, prefix }, 'a')];
  apps.push(await startInstance({ database, prefix }, 'b'));
  await until(
    () => apps.every((app) => app.bundle.services.cluster!.ownedShards().length === 8),
    5000,
    () => apps.map((app) => app.bundle.services.cluster!.ownedShards().length).join(' / '),
  );
  return {
    database,
    prefix,
    apps,
    seller: await createMember(apps[0], 'SELLER'),
    buyer: await createMember(apps[0], 'BUYER'),
    admin: await createMember(apps[0], 'ADMIN'),
  };
}

/**
 * The file's shared world, made by its first test and closed after the last: `withWorld(t, run)` runs a test in
 * it. Call once per file, at its top level.
 */
export function sharedWorld(label: string) {
  let shared: Promise<World> | undefined;
  test.after.always(async () => {
    if (shared) await closeWorld(await shared);
  });
  return async (t: ExecutionContext, run: (world: World) => Promise<void>): Promise<void> => {
    shared ??= twoInstances(label);
    await run(await shared);
    t.pass();
  };
}

/** A new product whose shard `owner` serves (ids grow: each is above every product made before it). */
export async function productOwnedBy(world: World, owner: TestApp, stockQuantity = 10): Promise<number> {
  for (;;) {
    const id = await createProduct(world.apps[0], world.seller.id, { stockQuantity, price: '10.00' });
    if (owner.bundle.services.cluster!.isOwner(id)) return id;
  }
}
