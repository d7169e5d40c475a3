// Orders for products the buyer may not know about (issue 15): an unknown id costs no lasting state (its stock
// actor stops as soon as its load finds nothing), and a refusal never names a product the buyer cannot read.
// The 1000-id test runs first (serial) so no other test's actor is active in that app while it counts.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { createMember, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { eventually, placeOrder, world } from './order-fixtures';

const apps: Partial<Record<'actor' | 'transactional', TestApp>> = {};
test.before(async () => {
  apps.actor = await startTestApp({ env: { INVENTORY_MODE: 'actor', ACTOR_IDLE_MS: '60000' } });
  apps.transactional = await startTestApp({ env: { INVENTORY_MODE: 'transactional' } });
});
test.after.always(async () => {
  await Promise.all(Object.values(apps).map((app) => app?.close()));
});

test.serial(
  'actor mode: 1000 orders for unknown product ids are 404 and leave no actor behind',
  async (t) => {
    const app = apps.actor!;
    const { inventory } = app.bundle.services;
    const buyer: TestMember = await createMember(app, 'BUYER');
    const firstUnknown = 1_000_000;
    const ids = Array.from({ length: 1000 }, (_, i) => firstUnknown + i);
    for (let i = 0; i < ids.length; i += 50) {
      const answers = await Promise.all(
        ids.slice(i, i + 50).map((productId) => placeOrder(app, buyer.token, [{ productId, quantity: 1 }])),
      );
      for (const [k, res] of answers.entries()) {
        assertError(t, res, 404, 'NOT_FOUND', '/api/v1/orders');
        t.is(res.body.message, `Product ${ids[i + k]} not found`);
      }
    }
    // The idle timeout is a minute: only the stop-at-once rule can bring the count back this quickly.
    await eventually(async () => inventory.activeActors() === 0, 2000);
    t.is(inventory.activeActors(), 0);
    t.is(inventory.inspect(firstUnknown), null);
    t.is(
      await app
        .db('orders')
        .count({ n: '*' })
        .first()
        .then((row) => Number(row?.n)),
      0,
    );
  },
);

test('actor mode: a known product keeps its actor (until idle) while an unknown one in the same cart does not', async (t) => {
  const app = apps.actor!;
  const { inventory } = app.bundle.services;
  const w = await world(app);
  const productId = await w.product({ stockQuantity: 5 });
  const ok = await placeOrder(app, w.buyer.token, [{ productId, quantity: 1 }]);
  t.is(ok.status, 201, ok.text);
  const refused = await placeOrder(app, w.buyer.token, [
    { productId, quantity: 1 },
    { productId: 2_000_000, quantity: 1 },
  ]);
  assertError(t, refused, 404, 'NOT_FOUND');
  t.is(refused.body.message, 'Product 2000000 not found');
  await eventually(async () => inventory.inspect(2_000_000) === null, 2000);
  t.like(inventory.inspect(productId), { stock: 4, reserved: 0, status: 'ready' });
});

for (const mode of ['actor', 'transactional'] as const) {
  test(`${mode} mode: ordering a DRAFT answers 409 PRODUCT_NOT_ON_SALE without its name`, async (t) => {
    const app = apps[mode]!;
    const w = await world(app);
    const secret = `Unreleased ${mode} gadget`;
    const draft = await w.product({ name: secret, status: 'DRAFT', stockQuantity: 5 });
    const res = await placeOrder(app, w.buyer.token, [{ productId: draft, quantity: 1 }]);
    assertError(t, res, 409, 'PRODUCT_NOT_ON_SALE', '/api/v1/orders');
    t.is(res.body.message, `The product ${draft} is not on sale`);
    t.false(res.text.includes('Unreleased'), 'the name of a product the buyer cannot read is not shown');

    // A public product is still named: the buyer can read it anyway.
    const name = `Public ${mode} gadget`;
    const listed = await w.product({ name, stockQuantity: 1 });
    const short = await placeOrder(app, w.buyer.token, [{ productId: listed, quantity: 2 }]);
    assertError(t, short, 409, 'INSUFFICIENT_STOCK', '/api/v1/orders');
    t.is(short.body.message, `Insufficient stock for product ${listed} (${name})`);
  });
}
