// The catalog version guard across instances. An owner that missed a seller's edit made on another instance (its
// NATS link is down; its shard lease is still valid for a moment, so it still takes the shard's orders) holds an
// actor that judged the product at its old price. Its guarded UPDATE (`AND catalog_version = ?`) refuses that
// judgement, so an order placed after the edit's 200 is never charged the old price or name: instances-coherence
// pins the same rule while the owner hears the edit, where its event almost always arrives first.
import test from 'ava';
import { address } from '../orders/order-fixtures';
import { createMember, createProduct } from '../helpers/factories';
import { natsTest, until, startProxiedPair, type ProxiedPair } from './cluster-fixtures';

let pair: ProxiedPair | undefined;
test.after.always(() => pair?.close());

natsTest(
  'an owner that missed an edit made elsewhere never charges the old price: its stale judgement is refused by the catalog version',
  async (t) => {
    pair = await startProxiedPair('catalog-version', {
      // A lease valid for 5 s after its last renewal: the owner keeps its shards a while after its link is cut.
      CLUSTER_LEASE_TTL_MS: '6000',
      CLUSTER_RENEW_MS: '1000',
    });
    const { a, b, proxy } = pair;
    await until(
      () => [a, b].every((app) => app.bundle.services.cluster!.ownedShards().length === 4),
      10_000,
      () => [a, b].map((app) => app.bundle.services.cluster!.ownedShards().length).join(' / '),
    );
    const seller = await createMember(a, 'SELLER');
    const buyer = await createMember(a, 'BUYER');
    let productId: number;
    do productId = await createProduct(a, seller.id, { stockQuantity: 50, price: '10.00', name: 'Old tea' });
    while (!a.bundle.services.cluster!.isOwner(productId));
    const order = () =>
      a.request('POST', '/api/v1/orders', {
        token: buyer.token,
        body: { orderItems: [{ productId, quantity: 1 }], shippingAddress: address },
      });
    // a's actor judges the product at 10.00 from now on.
    const before = await order();
    t.is(before.status, 201, before.text);
    t.like(before.body.orders[0].items[0], { productName: 'Old tea', productPrice: 10 });

    await pair.cutA();
    const edit = await b.request('PATCH', `/api/v1/products/${productId}`, {
      token: seller.token,
      body: { name: 'New tea', price: 12.5 },
    });
    t.is(edit.status, 200, edit.text);
    t.true(a.bundle.services.cluster!.isOwner(productId), 'a still owns the shard: the order runs there');
    t.like(a.bundle.services.inventory.inspect(productId), { stock: 49 });

    const after = await order();
    t.is(after.status, 201, after.text);
    t.like(after.body.orders[0].items[0], { productName: 'New tea', productPrice: 12.5 });
    t.is(after.body.orders[0].totalAmount, 12.5);
    const rows = await a.db('order_items').where('product_id', productId).select('product_price');
    t.deepEqual(rows.map((row: { product_price: string }) => Number(row.product_price)).sort(), [10, 12.5]);
    proxy.pass();
  },
);
