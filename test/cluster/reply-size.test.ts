// An owner answers the requests of one forwarded message in one reply, and NATS refuses a message over its
// `max_payload`. Orders forwarded together whose answers would not fit one reply all get their 201 (the caller
// sizes its messages by the orders writer's bound), not a 503 COMMIT_OUTCOME_UNKNOWN for orders that were
// committed. Two instances in this process, on a private nats-server whose limit is 16 KB, so a handful of
// 5-seller carts to a long address is enough (without the bound: 503s after the request timeout).
import test from 'ava';
import { createMember, createProduct } from '../helpers/factories';
import { createTestDatabase, startTestApp, type TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';
import { natsTest, uniquePrefix, until } from './cluster-fixtures';
import { startPrivateNats, type PrivateNats } from './private-nats';

let nats: PrivateNats | undefined;
test.after.always(async () => {
  await nats?.close();
});

natsTest('orders whose answers exceed one NATS message still each get their 201', async (t) => {
  nats = await startPrivateNats({ maxPayload: 16 * 1024 });
  const database = await createTestDatabase();
  const env = {
    NATS_URL: nats.url,
    CLUSTER_PREFIX: uniquePrefix('reply'),
    CLUSTER_SHARDS: '2',
    CLUSTER_REQUEST_TIMEOUT_MS: '3000',
  };
  const apps: TestApp[] = [];
  try {
    apps.push(await startTestApp({ database, env: { ...env, CLUSTER_INSTANCE_ID: 'a' } }));
    apps.push(await startTestApp({ database, env: { ...env, CLUSTER_INSTANCE_ID: 'b' } }));
    const [caller, owner] = apps;
    await until(
      () => apps.every((app) => app.bundle.services.cluster!.ownedShards().length === 1),
      10_000,
      () => apps.map((app) => app.bundle.services.cluster!.ownedShards().join(',')).join(' / '),
    );
    // Carts of 5 products from 5 sellers, the first (lowest id) owned by `owner`, shipped to a long address:
    // 5 orders in one answer.
    const productIds: number[] = [];
    do {
      productIds[0] = await createProduct(caller, (await createMember(caller, 'SELLER')).id, {
        stockQuantity: 100,
      });
    } while (!owner.bundle.services.cluster!.isOwner(productIds[0]));
    for (let i = 1; i < 5; i++) {
      const seller = await createMember(caller, 'SELLER');
      productIds.push(
        await createProduct(caller, seller.id, { name: `P${i} ${'n'.repeat(190)}`, stockQuantity: 100 }),
      );
    }
    const longAddress = {
      ...address,
      address: 'a'.repeat(255),
      addressDetail: 'd'.repeat(255),
      receiverName: 'r'.repeat(100),
    };
    const buyers = await Promise.all(Array.from({ length: 16 }, () => createMember(caller, 'BUYER')));
    const answers = await Promise.all(
      buyers.map((buyer) =>
        caller.request('POST', '/api/v1/orders', {
          token: buyer.token,
          body: {
            orderItems: productIds.map((productId) => ({ productId, quantity: 1 })),
            shippingAddress: longAddress,
          },
        }),
      ),
    );
    t.deepEqual(
      answers.map((answer) => answer.status),
      buyers.map(() => 201),
      answers.find((answer) => answer.status !== 201)?.text,
    );
    const answerBytes = Buffer.byteLength(JSON.stringify(answers[0].body));
    t.true(answerBytes > 4 * 1024, `one answer takes ${answerBytes} bytes: four do not fit a message`);
    const rows = await caller.db('products').whereIn('id', productIds).select('stock_quantity');
    t.deepEqual(
      rows.map((row: { stock_quantity: number }) => row.stock_quantity),
      productIds.map(() => 100 - buyers.length),
    );
  } finally {
    await Promise.allSettled(apps.map((app) => app.close()));
    await database.drop();
  }
});
