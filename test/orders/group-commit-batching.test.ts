// The group commit batches on both databases: orders submitted in the same event-loop turn share one
// transaction. On SQLite (better-sqlite3 answers synchronously) a batch taken in the same tick as its first
// request held that request alone, and under load every order paid a transaction of its own
// (bench/README.md, orders, issue 13 2026-11-24: 1 order per commit before, ~50 after).
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { orderBody, placeOrder, productRow, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { INVENTORY_MODE: 'actor' } });
});
test.after.always(async () => {
  await app?.close();
});

/** Requests and transactions of the group commit so far, from the service's own /metrics. */
async function batches(): Promise<{ requests: number; transactions: number }> {
  const res = await app.request('GET', '/metrics');
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(res.text)?.[1] ?? 0);
  return {
    requests: value('marketplace_group_commit_batch_size_sum'),
    transactions: value('marketplace_group_commit_batch_size_count'),
  };
}

test('orders placed in one turn for a loaded product share one group-commit transaction', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 100 });
  // The first order loads the product's actor; after it, a placement reaches the group commit without I/O.
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).status, 201);
  const before = await batches();
  const placed = await Promise.all(
    Array.from({ length: 24 }, () =>
      app.bundle.services.orders.place(buyer.id, orderBody([{ productId, quantity: 1 }])),
    ),
  );
  t.is(new Set(placed.map((result) => result.orders[0].id)).size, 24);
  const after = await batches();
  t.deepEqual(
    { requests: after.requests - before.requests, transactions: after.transactions - before.transactions },
    { requests: 24, transactions: 1 },
  );
  t.deepEqual(await productRow(app, productId), { stock: 75, status: 'ON_SALE', salesCount: 25 });
});
