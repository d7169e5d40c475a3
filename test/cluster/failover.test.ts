// An owner killed with SIGKILL (a real child process): its leases expire and the live nodes take its shards
// within 5 s; requests for them during the move are answered 503 + Retry-After at once (never a hang, never
// another error) and are served by the new owners afterwards; a node started again gets shards back, and a
// SIGTERM (graceful close) hands them over without waiting for the TTL.
import { ServiceUnavailableError } from '../../lib/errors';
import type { Cluster } from '../../lib/cluster/cluster';
import { createLogger } from '../../lib/logger';
import { LogCollector } from '../helpers/harness';
import {
  cleanup,
  natsTest,
  productIn,
  spawnNode,
  startNode,
  uniquePrefix,
  until,
  type ChildNode,
} from './cluster-fixtures';

const SHARDS = 64;

/** The live in-process nodes plus the child together own every shard exactly once. */
function settled(nodes: Cluster[], child: ChildNode | null): boolean {
  const all = [...nodes.flatMap((node) => node.ownedShards()), ...(child?.owned ?? [])];
  return (
    all.length === SHARDS &&
    new Set(all).size === SHARDS &&
    [...nodes.map((node) => node.ownedShards().length), child?.owned.length ?? 0].every(
      (n) => n <= Math.ceil(SHARDS / (nodes.length + (child ? 1 : 0))),
    )
  );
}

interface Outcome {
  productId: number;
  ok: boolean;
  servedBy?: string;
  error?: unknown;
  ms: number;
  at: number;
}

/**
 * Keeps `loops` request loops running through `via` over `products` until `stop()`. Each request starts in a
 * new macrotask, as a client's request arrives: a request for a shard `via` owns runs in place and resolves in
 * microtasks, so a loop of those alone would starve this process's timers (its lease renewals included).
 */
function load(via: Cluster, products: number[], loops = 4) {
  const outcomes: Outcome[] = [];
  let running = true;
  const workers = Array.from({ length: loops }, async (_, w) => {
    for (let i = w; running; i += loops) {
      await new Promise((resolve) => setImmediate(resolve));
      const productId = products[i % products.length];
      const started = Date.now();
      try {
        const value = await via.request<{ servedBy: string }>(productId, {});
        outcomes.push({
          productId,
          ok: true,
          servedBy: value.servedBy,
          ms: Date.now() - started,
          at: started,
        });
      } catch (error) {
        outcomes.push({ productId, ok: false, error, ms: Date.now() - started, at: started });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

natsTest(
  'kill -9 of an owner: its shards move to the live nodes within 5 s, requests during the move get 503 (never a hang), a restarted node gets shards back',
  async (t) => {
    const prefix = uniquePrefix('failover');
    const nodes: Cluster[] = [];
    const children: ChildNode[] = [];
    // The live nodes' warnings (a lost lease, a failed balancing round): shown when a step does not converge.
    const warnings = new LogCollector();
    const recent = () => warnings.lines.slice(-8).join(' | ');
    try {
      for (const id of ['a', 'b']) {
        const node = await startNode(
          prefix,
          `node-${id}`,
          { CLUSTER_REQUEST_TIMEOUT_MS: '1000' },
          createLogger({ level: 'warn', format: 'line', out: warnings }),
        );
        node.serve(async () => ({ servedBy: node.instanceId }));
        nodes.push(node);
      }
      await Promise.all(nodes.map((node) => node.start()));
      const victim = spawnNode(prefix, 'node-victim');
      children.push(victim);
      await until(
        () => settled(nodes, victim) && victim.owned.length >= 20,
        15_000,
        () =>
          `victim ${victim.owned.length}; a+b ${nodes.map((n) => n.ownedShards().length).join(' + ')}; ${victim.stderr}`,
      );

      const products = victim.owned.map((shard) => productIn(shard));
      const traffic = load(nodes[0], products);
      await until(
        () => traffic.outcomes.filter((o) => o.servedBy === 'node-victim').length >= 20,
        5000,
        () => 'victim serves',
      );

      const killedAt = Date.now();
      victim.process.kill('SIGKILL');
      await victim.exited;
      await until(
        () => settled(nodes, null),
        5000,
        () => `${nodes.map((n) => n.ownedShards().length).join(' + ')}; ${recent()}`,
      );
      const settledAt = Date.now();
      const moved = settledAt - killedAt;
      t.log(`shards moved ${moved} ms after SIGKILL`);
      t.true(moved < 5000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await traffic.stop();

      const during = traffic.outcomes.filter((o) => o.at >= killedAt);
      const failed = during.filter((o) => !o.ok);
      t.true(failed.length > 0, 'requests caught in the move were refused');
      for (const outcome of failed) {
        t.true(outcome.error instanceof ServiceUnavailableError, String(outcome.error));
        const error = outcome.error as ServiceUnavailableError;
        t.is(error.status, 503);
        t.is(error.code, 'SERVICE_UNAVAILABLE');
        t.is(error.details?.headers?.['Retry-After'], '4');
      }
      const slowest = traffic.outcomes.reduce((max, o) => Math.max(max, o.ms), 0);
      t.true(slowest <= 1500, `slowest request ${slowest} ms (timeout 1000 ms): never a hang`);
      const after = traffic.outcomes.filter((o) => o.at >= settledAt);
      t.true(after.length > 0);
      t.true(
        after.every((o) => o.ok && (o.servedBy === 'node-a' || o.servedBy === 'node-b')),
        `after the move the live nodes answer every request: ${JSON.stringify(
          after
            .filter((o) => !o.ok)
            .map((o) => ({ p: o.productId, at: o.at - killedAt, ms: o.ms, e: String(o.error) })),
        )}`,
      );

      // A node started again joins and gets its fair share back from the live nodes.
      const rejoined = spawnNode(prefix, 'node-rejoined');
      children.push(rejoined);
      await until(
        () => settled(nodes, rejoined) && rejoined.owned.length >= SHARDS - 2 * 22,
        15_000,
        () =>
          `rejoined ${rejoined.owned.length}; ${nodes.map((n) => n.ownedShards().length).join(' + ')}; ${rejoined.stderr}`,
      );
      const back = await nodes[0].request<{ servedBy: string }>(productIn(rejoined.owned[0]), {});
      t.deepEqual(back, { servedBy: 'node-rejoined' });

      // SIGTERM: the child closes the cluster gracefully; its shards move without waiting for the lease TTL.
      const stoppedAt = Date.now();
      rejoined.process.kill('SIGTERM');
      await rejoined.exited;
      const handedOver = await until(
        () => settled(nodes, null),
        5000,
        () => `${nodes.map((n) => n.ownedShards().length).join(' + ')}; ${recent()}`,
      );
      t.log(`graceful handover ${Date.now() - stoppedAt} ms after SIGTERM`);
      t.true(Date.now() - stoppedAt < 3000 + 1000, 'faster than lease expiry plus a balancing round');
      t.true(handedOver >= 0);
    } finally {
      for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await cleanup(prefix, nodes);
    }
  },
);
