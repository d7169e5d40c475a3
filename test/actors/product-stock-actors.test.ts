// The product stock actors and their registry, driven directly against a real database: single
// activation under concurrent first use, serialised decisions, passivation and reactivation, errors
// turned into failed commands, and the catalog's stock writes routed through the actors.
import test from 'ava';
import { createDb } from '../../lib/db';
import { createLogger } from '../../lib/logger';
import { createStockRegistry } from '../../actors/registry';
import { loadProductView } from '../../lib/inventory/stock-repository';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { eventually, placeOrder, productRow } from '../orders/order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { ACTOR_IDLE_MS: '150' } });
});
test.after.always(async () => {
  await app?.close();
});

const quietLogger = createLogger({ level: 'fatal', format: 'line', out: { write: () => undefined } });

test('concurrent first requests share one activation (one load) and decisions are serialised, in the order asked', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 7 });
  const registry = createStockRegistry({
    load: (id) => loadProductView(app.db, id),
    logger: quietLogger,
    idleMs: 60_000,
  });
  let loads = 0;
  // Only this product's reads: the file's other tests run concurrently on the same connection pool.
  const count = (query: { sql: string; bindings?: unknown[] }) => {
    if (/from [`"]products[`"]/i.test(query.sql) && query.bindings?.includes(productId)) loads++;
  };
  app.db.on('query', count);
  try {
    const asked = Array.from({ length: 20 }, () => Promise.resolve(registry.reserve(productId, 1)));
    const settled: boolean[] = Array(20).fill(false);
    asked.forEach((answer, i) => void answer.then(() => (settled[i] = true)));
    // Decided in the order asked: the first 7 take the stock; the other 13 would fit were those given back, so
    // they wait for them to settle.
    const first = await Promise.all(asked.slice(0, 7));
    t.is(loads, 1);
    t.is(registry.activeCount(), 1);
    t.true(first.every((r) => r.ok));
    await new Promise((resolve) => setTimeout(resolve, 20));
    t.deepEqual(settled.slice(7), Array(13).fill(false), 'the others wait while the 7 are held');
    t.like(registry.inspect(productId), { stock: 7, reserved: 7, status: 'ready' });
    // A release gives units back in memory: as many waiting requests take them.
    registry.release((first[0] as Extract<(typeof first)[0], { ok: true }>).reservation);
    const eighth = await asked[7];
    t.true(eighth.ok);
    // A commit takes the units off the stock: the waiting ones are refused.
    const held = [...first.slice(1), eighth].map((r) => (r as Extract<typeof r, { ok: true }>).reservation);
    registry.committedAll(held);
    const rest = await Promise.all(asked.slice(8));
    t.deepEqual(
      rest.map((r) => !r.ok && r.reason),
      Array(12).fill('INSUFFICIENT_STOCK'),
    );
    t.like(registry.inspect(productId), { stock: 0, reserved: 0 });
  } finally {
    app.db.off('query', count);
    registry.stop();
  }
  t.is(registry.activeCount(), 0);
});

test("a committed batch's reservations settle with one COMMITTED per actor, units summed", async (t) => {
  const seller = await createMember(app, 'SELLER');
  const hot = await createProduct(app, seller.id, { stockQuantity: 10 });
  const other = await createProduct(app, seller.id, { stockQuantity: 4 });
  const registry = createStockRegistry({
    load: (id) => loadProductView(app.db, id),
    logger: quietLogger,
    idleMs: 60_000,
  });
  try {
    const results = await Promise.all([
      registry.reserve(hot, 2),
      registry.reserve(hot, 3),
      registry.reserve(other, 4),
      registry.reserve(hot, 1),
    ]);
    const reservations = results.map((r) => {
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
      return r.reservation;
    });
    t.like(registry.inspect(hot), { stock: 10, reserved: 6 });
    // One message per actor: count the events the hot product's actor receives.
    const events: string[] = [];
    const actor = reservations[0].entry.actor;
    const sub = actor.system.inspect((e) => {
      if (e.type === '@xstate.event' && e.actorRef === actor) events.push(e.event.type);
    });
    registry.committedAll(reservations);
    sub.unsubscribe();
    t.deepEqual(events, ['COMMITTED']);
    t.like(registry.inspect(hot), { stock: 4, reserved: 0 });
    // the other product's stock reached 0: its status follows (SOLD_OUT), as one commit at a time would leave it
    t.like(registry.inspect(other), { stock: 0, reserved: 0 });
    t.is((await registry.reserve(other, 1)).ok, false);
    t.like(await registry.reserve(hot, 4), { ok: true });
    t.false((await registry.reserve(hot, 5)).ok); // more than the stock: refused at once
  } finally {
    registry.stop();
  }
});

test('a ready actor answers a reservation synchronously; one still loading answers with a promise', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 3 });
  const registry = createStockRegistry({
    load: (id) => loadProductView(app.db, id),
    logger: quietLogger,
    idleMs: 60_000,
    freshMs: 60_000, // a refusal is decided on the loaded view, however slow the machine
  });
  try {
    // First use: the actor is loading the product, so the command is deferred and answered later.
    const first = registry.reserve(productId, 1);
    t.true(first instanceof Promise);
    const firstResult = await first;
    t.like(firstResult, { ok: true, reservation: { productId, quantity: 1 } });
    // Ready: decided within the call, a plain result (no promise, no microtask), refusals included.
    const second = registry.reserve(productId, 2);
    t.false(second instanceof Promise);
    t.like(second, {
      ok: true,
      product: { id: productId, stock: 3 },
      reservation: { productId, quantity: 2 },
    });
    const refused = registry.reserve(productId, 4);
    t.false(refused instanceof Promise);
    t.like(refused, { ok: false, reason: 'INSUFFICIENT_STOCK' });
    // One that fits the stock but not what is held now waits for a reservation to settle: a promise.
    const waiting = registry.reserve(productId, 1);
    t.true(waiting instanceof Promise);
    t.like(registry.inspect(productId), { stock: 3, reserved: 3 });
    // A reservation still commits and releases through its actor; the waiting one is decided on each.
    if ((second as { ok: boolean }).ok)
      registry.committedAll([(second as Extract<typeof second, { ok: true }>).reservation]);
    t.like(registry.inspect(productId), { stock: 1, reserved: 1 });
    if (firstResult.ok) registry.release(firstResult.reservation);
    t.like(await waiting, { ok: true, reservation: { productId, quantity: 1 } });
    t.like(registry.inspect(productId), { stock: 1, reserved: 1 });
  } finally {
    registry.stop();
  }
});

test('a reservation still waiting for its actor fails when the registry stops (no promise left hanging)', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 3 });
  let finishLoad!: () => void;
  const registry = createStockRegistry({
    // The load waits until the test lets it go: the command stays deferred meanwhile.
    load: async (id) => {
      await new Promise<void>((resolve) => (finishLoad = resolve));
      return loadProductView(app.db, id);
    },
    logger: quietLogger,
    idleMs: 60_000,
  });
  const waiting = registry.reserve(productId, 1);
  t.true(waiting instanceof Promise);
  registry.stop();
  await t.throwsAsync(async () => waiting, {
    message: new RegExp(`stock actor of product ${productId} stopped`),
  });
  finishLoad();
  t.is(registry.activeCount(), 0);
});

test('an actor error becomes a failed command, not a crash, and the actor is dropped', async (t) => {
  const broken = createDb({ client: 'sqlite', filename: `${app.database.dataDir}/missing-dir/never.sqlite` });
  await broken.destroy(); // every query now fails
  const registry = createStockRegistry({
    load: (id) => loadProductView(broken, id),
    logger: quietLogger,
    idleMs: 60_000,
  });
  await t.throwsAsync(async () => registry.reserve(1, 1));
  await t.throwsAsync(async () => registry.reserve(1, 1)); // a fresh activation fails again, still no crash
  t.is(registry.activeCount(), 0);
});

test('idle actors passivate (memory follows the active products) and reactivate with the right stock', async (t) => {
  const { inventory } = app.bundle.services;
  const buyer = await createMember(app, 'BUYER');
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 2 }])).status, 201);
  // active with the committed stock, unless the (150 ms) idle timer already passivated it on a slow machine
  const view = inventory.inspect(productId);
  if (view) t.like(view, { stock: 3, reserved: 0 });
  await eventually(async () => inventory.inspect(productId) === null, 3000);
  // changed behind its back while passivated: the new activation reads the database
  await app.db('products').where('id', productId).update({ stock_quantity: 4 });
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 5 }])).body.code, 'INSUFFICIENT_STOCK');
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 4 }])).status, 201);
  t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 6 });
});

test("the seller's stock PATCH and DELETE go through the actor: the next orders see them at once", async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 1 });
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).status, 201); // actor active, SOLD_OUT
  const patch = await app.request('PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { stockQuantity: 3 },
  });
  t.is(patch.status, 200);
  t.like(patch.body, { stockQuantity: 3, status: 'ON_SALE' });
  t.is((await placeOrder(app, buyer.token, [{ productId, quantity: 3 }])).status, 201);
  t.deepEqual(await productRow(app, productId), { stock: 0, status: 'SOLD_OUT', salesCount: 4 });
  await app.request('PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { stockQuantity: 10 },
  });
  const deleted = await app.request('DELETE', `/api/v1/products/${productId}`, { token: seller.token });
  t.is(deleted.status, 204);
  const afterDelete = await placeOrder(app, buyer.token, [{ productId, quantity: 1 }]);
  t.is(afterDelete.status, 404);
  t.is(afterDelete.body.code, 'NOT_FOUND');
  t.like(await productRow(app, productId), { stock: 10, status: 'DELETED' });
});

test('a product edited elsewhere (price) makes the actor re-read: the order snapshots the new price', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 5, price: '3.00' });
  t.is(
    (await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).body.orders[0].items[0].productPrice,
    3,
  );
  const patch = await app.request('PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { price: 4.5 },
  });
  t.is(patch.status, 200);
  t.is(
    (await placeOrder(app, buyer.token, [{ productId, quantity: 1 }])).body.orders[0].items[0].productPrice,
    4.5,
  );
});
