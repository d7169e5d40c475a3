// A product's stock actor re-reading its product (a change from another area: a price edit, an image) while a
// batch holding its units commits. The batch's news (COMMITTED) reaches the actor only after the COMMIT; a read
// that saw the commit must not have the batch taken off again, or the actor refuses units the database holds
// (409 INSUFFICIENT_STOCK for up to the 100 ms a refusal trusts a view). The group commit runs the actors' reads
// between batches (`read`), and the actor reads again after news that came while it read.
import test from 'ava';
import type { GroupCommit } from '../../lib/inventory/group-commit';
import { startTestApp, type TestApp } from '../helpers/harness';
import { placeOrder, productRow, world } from './order-fixtures';
import { carries } from '../helpers/queries';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

interface QueryEvent {
  sql: string;
  bindings?: unknown[];
  __knexTxId?: unknown;
}

/** When the transaction that deducts `productId` sends COMMIT, announce a change of the product (once). */
function rereadAtCommitOf(productId: number): () => boolean {
  const deducting = new Set<unknown>();
  let fired = false;
  const listener = (query: QueryEvent) => {
    const sql = query.sql.toLowerCase();
    if (/^update [`"]products[`"]/.test(sql) && carries(query, productId)) {
      deducting.add(query.__knexTxId);
    } else if (sql.startsWith('commit') && deducting.has(query.__knexTxId)) {
      fired = true;
      app.db.removeListener('query', listener);
      void app.bundle.services.events.emit('productsChanged', { productIds: [productId], origin: 'catalog' });
    }
  };
  app.db.on('query', listener);
  return () => fired;
}

test.serial(
  'a product re-read while its batch commits: the next order gets every unit the database holds',
  async (t) => {
    const { buyer, product } = await world(app);
    const inventory = app.bundle.services.inventory;
    for (let run = 0; run < 8; run++) {
      const productId = await product({ stockQuantity: 10 });
      await inventory.changeProduct(productId, async () => undefined); // the actor is up, its view 10
      const fired = rereadAtCommitOf(productId);
      const first = await placeOrder(app, buyer.token, [{ productId, quantity: 4 }]);
      t.is(first.status, 201);
      t.true(fired(), 'the re-read was announced at the COMMIT');
      const rest = await placeOrder(app, buyer.token, [{ productId, quantity: 6 }]);
      t.is(rest.status, 201, `run ${run}: ${JSON.stringify(rest.body)}`);
      t.is(rest.body.orders[0].items[0].quantity, 6);
      t.like(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 10 });
      t.like(inventory.inspect(productId), { stock: 0 });
    }
  },
);

/** The group commit of the test app's (actor-mode, one process) inventory. */
const groupCommit = () =>
  (app.bundle.services.inventory as unknown as { groupCommit: GroupCommit }).groupCommit;

test.serial(
  "an actor's read asked for while a batch is in flight starts after the batch told its actors",
  async (t) => {
    const { buyer, product } = await world(app);
    const productId = await product({ stockQuantity: 5 });
    const inventory = app.bundle.services.inventory;
    let reading: Promise<{ actorAtStart: unknown; stock: number }> | undefined;
    const onQuery = (query: QueryEvent) => {
      // The batch's transaction is under way (its UPDATE is sent): a read is asked for now.
      if (!reading && /^update [`"]products[`"]/i.test(query.sql) && carries(query, productId))
        reading = groupCommit().read(async () => {
          const actorAtStart = inventory.inspect(productId);
          return { actorAtStart, stock: (await productRow(app, productId)).stock };
        });
    };
    app.db.on('query', onQuery);
    try {
      const placed = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
      t.is(placed.status, 201);
      t.truthy(reading, 'the read was asked for during the batch');
      // When the read started, the actor had the batch's news (COMMITTED: 2 reserved units became stock 3).
      t.like(await reading, { actorAtStart: { stock: 3, reserved: 0 }, stock: 3 });
    } finally {
      app.db.removeListener('query', onQuery);
    }
  },
);

test.serial('a batch waits for the reads under way', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 5 });
  let finishRead!: () => void;
  const held = new Promise<void>((resolve) => (finishRead = resolve));
  const read = groupCommit().read(() => held);
  let updates = 0;
  const onQuery = (query: QueryEvent) => {
    if (/^update [`"]products[`"]/i.test(query.sql) && carries(query, productId)) updates++;
  };
  app.db.on('query', onQuery);
  try {
    const placing = placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.is(updates, 0, 'no batch started while the read runs');
    finishRead();
    await read;
    t.is((await placing).status, 201);
    t.is(updates, 1);
  } finally {
    finishRead();
    app.db.removeListener('query', onQuery);
  }
});

test.serial('reads that keep overlapping one another do not hold a batch back', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 5 });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  // Reads of 30 ms asked for every 15 ms for 1.5 s, so there is always one under way (e.g. a cold catalogue's
  // actors activating): the batch takes its turn after those under way, and the ones asked for later wait for it.
  let stop = false;
  const reading = (async () => {
    const all: Promise<unknown>[] = [];
    for (const until = Date.now() + 1500; !stop && Date.now() < until; await sleep(15))
      all.push(groupCommit().read(() => sleep(30)));
    await Promise.all(all);
  })();
  await sleep(50);
  const started = Date.now();
  const placed = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
  const took = Date.now() - started;
  stop = true;
  await reading;
  t.is(placed.status, 201);
  t.true(took < 500, `the order took ${took} ms (reads under way last 30 ms)`);
});

test.serial(
  'a re-read at the COMMIT of a cancellation: the actor counts the restored units once (it re-reads, it never adds)',
  async (t) => {
    const { buyer, product } = await world(app);
    const inventory = app.bundle.services.inventory;
    const differ: string[] = [];
    for (let run = 0; run < 8; run++) {
      const productId = await product({ stockQuantity: 10 });
      const placed = await placeOrder(app, buyer.token, [{ productId, quantity: 4 }]);
      t.is(placed.status, 201);
      await inventory.changeProduct(productId, async () => undefined); // the actor is up, its view 6
      const fired = rereadAtCommitOf(productId); // the restore's UPDATE, then its COMMIT
      const cancelled = await app.request('POST', `/api/v1/orders/${placed.body.orders[0].id}/cancel`, {
        token: buyer.token,
      });
      t.is(cancelled.status, 200);
      t.true(fired(), 'the re-read was announced at the COMMIT');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const row = await productRow(app, productId);
      t.is(row.stock, 10);
      const actor = inventory.inspect(productId);
      if (actor?.stock !== row.stock) differ.push(`run ${run}: database ${row.stock}, actor ${actor?.stock}`);
    }
    t.deepEqual(differ, []);
  },
);
