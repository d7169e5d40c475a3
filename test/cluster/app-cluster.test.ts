// The service in cluster mode, two (then three) instances in this process on one MariaDB database and the real
// NATS: orders run on the owner of their first product whichever instance took them, the owner's answers
// (refusals included) reach the client unchanged, changes made on one instance reach the other's caches and
// actors, and a shard that moves away takes its idle actors with it. The multi-process suites (separate
// `npm start` processes, kill -9) build on what this file pins.
import type { TestApp } from '../helpers/harness';
import { address } from '../orders/order-fixtures';
import { createMember, type TestMember } from '../helpers/factories';
import { assertError } from '../helpers/assertions';
import { countQueries, readsProducts } from '../helpers/queries';
import { connect } from '@nats-io/transport-node';
import { exactlyOnce, NATS_URL, natsTest, until } from './cluster-fixtures';
import { productOwnedBy, sharedWorld, startInstance } from './app-world';

const withWorld = sharedWorld('app');

const order = (app: TestApp, buyer: TestMember, productId: number, quantity = 1) =>
  app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: { orderItems: [{ productId, quantity }], shippingAddress: address },
  });

natsTest('an order taken by either instance runs on the owner of its product', (t) =>
  withWorld(t, async (world) => {
    const [owner, other] = world.apps;
    const productId = await productOwnedBy(world, owner);

    const viaOther = await order(other, world.buyer, productId, 2);
    t.is(viaOther.status, 201, viaOther.text);
    t.like(viaOther.body.orders[0], { status: 'PENDING', buyerId: world.buyer.id, totalAmount: 20 });
    t.like(viaOther.body.orders[0].items[0], { productId, quantity: 2, productPrice: 10 });
    const viaOwner = await order(owner, world.buyer, productId, 1);
    t.is(viaOwner.status, 201, viaOwner.text);

    // The owner's actor decided both; the other instance holds no actor for the product.
    t.like(owner.bundle.services.inventory.inspect(productId), { stock: 7, reserved: 0 });
    t.is(other.bundle.services.inventory.inspect(productId), null);
    const row = await owner.db('products').where('id', productId).first('stock_quantity');
    t.is(row.stock_quantity, 7);
  }),
);

natsTest("the owner's refusal reaches the client through the other instance unchanged", (t) =>
  withWorld(t, async (world) => {
    const [owner, other] = world.apps;
    const productId = await productOwnedBy(world, owner, 3);
    const viaOther = await order(other, world.buyer, productId, 5);
    const viaOwner = await order(owner, world.buyer, productId, 5);
    t.is(viaOther.status, 409);
    t.is(viaOther.body.code, 'INSUFFICIENT_STOCK');
    t.is(viaOther.body.message, viaOwner.body.message);
    t.is(viaOther.body.path, '/api/v1/orders');

    const unknown = await order(other, world.buyer, 10_000_000 + (productId % 16), 1);
    t.is(unknown.status, 404);
    t.is(unknown.body.code, 'NOT_FOUND');
  }),
);

natsTest(
  "a forwarded order's notifications are delivered by the owner's dispatcher, which its commit woke",
  (t) =>
    withWorld(t, async (world) => {
      const [owner, other] = world.apps;
      const productId = await productOwnedBy(world, owner);
      const deliveredBy = new Map<number, string>();
      const stops = world.apps.map((app, i) =>
        app.bundle.services.dispatcher.events.on('delivered', ({ outboxIds }) => {
          for (const id of outboxIds) deliveredBy.set(id, i === 0 ? 'owner' : 'other');
        }),
      );
      try {
        const placed = await order(other, world.buyer, productId, 1);
        t.is(placed.status, 201, placed.text);
        const requestId = placed.headers.get('x-request-id');
        const rows: Array<{ id: number }> = await owner
          .db('notification_outbox')
          .where('request_id', requestId)
          .select('id');
        t.true(rows.length > 0, 'the order wrote outbox rows');
        const ids = rows.map((row) => Number(row.id));
        // Well inside the 5 s sweep: only a kick after the commit delivers this fast.
        await until(
          () => ids.every((id) => deliveredBy.has(id)),
          2000,
          () => `${[...deliveredBy.entries()].filter(([id]) => ids.includes(id)).length} of ${ids.length}`,
        );
        t.deepEqual(
          ids.map((id) => deliveredBy.get(id)),
          ids.map(() => 'owner'),
        );
      } finally {
        stops.forEach((stop) => stop());
      }
    }),
);

natsTest('a product edit and a new category on one instance show on the other within 1 s', (t) =>
  withWorld(t, async (world) => {
    const [first, second] = world.apps;
    const productId = await productOwnedBy(world, first);
    const before = await second.request('GET', `/api/v1/products/${productId}`);
    t.is(before.body.price, 10); // cached on the second instance now

    const edit = await first.request('PATCH', `/api/v1/products/${productId}`, {
      token: world.seller.token,
      body: { price: 12.5, name: 'Renamed on the first' },
    });
    t.is(edit.status, 200, edit.text);
    const ms = await until(
      async () => (await second.request('GET', `/api/v1/products/${productId}`)).body.price === 12.5,
      1000,
      () => 'the second instance still serves the old price',
    );
    t.true(ms <= 1000);
    const after = await second.request('GET', `/api/v1/products/${productId}`);
    t.like(after.body, { price: 12.5, name: 'Renamed on the first' });
    t.is(
      after.headers.get('etag'),
      (await first.request('GET', `/api/v1/products/${productId}`)).headers.get('etag'),
    );

    // An order taken by the second instance after the edit's 200 is charged the new price.
    const placed = await order(second, world.buyer, productId, 1);
    t.is(placed.status, 201, placed.text);
    t.like(placed.body.orders[0].items[0], { productPrice: 12.5, productName: 'Renamed on the first' });

    const listed = await second.request('GET', '/api/v1/categories');
    t.is(listed.status, 200);
    const created = await first.request('POST', '/api/v1/admin/categories', {
      token: world.admin.token,
      body: { name: `Shown everywhere ${productId}`, displayOrder: 1 },
    });
    t.is(created.status, 201, created.text);
    await until(
      async () =>
        (await second.request('GET', '/api/v1/categories')).body.some(
          (category: { id: number }) => category.id === created.body.id,
        ),
      1000,
      () => 'the second instance does not list the new category',
    );
  }),
);

natsTest("a password change on one instance ends the member's access tokens on the other within 1 s", (t) =>
  withWorld(t, async (world) => {
    const [first, second] = world.apps;
    const member = await createMember(first, 'BUYER');
    // Both instances hold the member's token version now (the test config caches it for 30 s).
    for (const app of world.apps) {
      const me = await app.request('GET', '/api/v1/members/me', { token: member.token });
      t.is(me.status, 200, me.text);
    }
    const changed = await first.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { password: 'New-password-1', currentPassword: member.password },
    });
    t.is(changed.status, 200, changed.text);
    const here = await first.request('GET', '/api/v1/members/me', { token: member.token });
    assertError(t, here, 401, 'INVALID_TOKEN', '/api/v1/members/me');
    // The other instance drops its copy when the event arrives over NATS, not when its cache entry expires.
    const ms = await until(
      async () => (await second.request('GET', '/api/v1/members/me', { token: member.token })).status === 401,
      1000,
      () => 'the second instance still accepts the old access token',
    );
    t.true(ms <= 1000);
    const there = await second.request('GET', '/api/v1/members/me', { token: member.token });
    assertError(t, there, 401, 'INVALID_TOKEN', '/api/v1/members/me');
    t.regex(there.body.message, /password or role changed/);
  }),
);

natsTest(
  'a password change travels as one membersChanged message; a remote one is never sent on, a malformed one is ignored',
  (t) =>
    withWorld(t, async (world) => {
      const [first, second] = world.apps;
      const nc = await connect({ servers: NATS_URL });
      const subject = `${world.prefix}.events.membersChanged`;
      const wire: Array<Record<string, unknown>> = [];
      const sub = nc.subscribe(subject, {
        callback: (_err, msg) => {
          try {
            wire.push(msg.json());
          } catch {
            // the test's own message that is no JSON
          }
        },
      });
      await nc.flush();
      const heard: Array<{ memberIds: number[]; remote?: boolean }> = [];
      const off = second.bundle.services.events.on('membersChanged', ({ memberIds, remote }) => {
        heard.push({ memberIds: [...memberIds], remote });
      });
      try {
        const member = await createMember(first, 'BUYER');
        const changed = await first.request('PATCH', '/api/v1/members/me', {
          token: member.token,
          body: { password: 'New-password-2', currentPassword: member.password },
        });
        t.is(changed.status, 200, changed.text);
        await until(
          () => heard.length >= 1,
          1000,
          () => 'the second instance heard nothing',
        );
        // Malformed events from elsewhere: not JSON, ids that are no member ids, no ids at all.
        const event = (payload: unknown) =>
          JSON.stringify({ name: 'membersChanged', payload, origin: 'elsewhere' });
        nc.publish(subject, 'not json');
        nc.publish(subject, event({ memberIds: 'all' }));
        nc.publish(subject, event({ memberIds: [1.5, '7', null] }));
        nc.publish(subject, event({}));
        nc.publish(subject, event({ memberIds: [member.id] }));
        await until(
          () => heard.length >= 2,
          1000,
          () => `heard ${JSON.stringify(heard)}`,
        );
        await nc.flush();
        await new Promise((resolve) => setTimeout(resolve, 200));
        t.deepEqual(heard, [
          { memberIds: [member.id], remote: true },
          { memberIds: [member.id], remote: true },
        ]);
        // On the wire: the change once, from the first instance, and the test's own four JSON events: the second
        // instance sent nothing on.
        const ours = wire.filter((message) => message.origin !== 'elsewhere');
        t.is(ours.length, 1, JSON.stringify(ours));
        t.like(ours[0], { name: 'membersChanged', payload: { memberIds: [member.id] }, origin: 'a' });
        t.is(wire.length, 5);
        const me = await second.request('GET', '/api/v1/members/me', { token: world.buyer.token });
        t.is(me.status, 200, 'the second instance still serves');
      } finally {
        off();
        sub.unsubscribe();
        await nc.close();
      }
    }),
);

natsTest("a stock change made on a non-owner is adopted by the owner's actor", (t) =>
  withWorld(t, async (world) => {
    const [owner, other] = world.apps;
    const productId = await productOwnedBy(world, owner, 5);
    t.is((await order(owner, world.buyer, productId, 1)).status, 201);
    t.like(owner.bundle.services.inventory.inspect(productId), { stock: 4 });

    const patched = await other.request('PATCH', `/api/v1/products/${productId}`, {
      token: world.seller.token,
      body: { stockQuantity: 40 },
    });
    t.is(patched.status, 200, patched.text);
    t.is(patched.body.stockQuantity, 40);
    await until(
      () => owner.bundle.services.inventory.inspect(productId)?.stock === 40,
      1000,
      () => JSON.stringify(owner.bundle.services.inventory.inspect(productId)),
    );
    const big = await order(other, world.buyer, productId, 30);
    t.is(big.status, 201, big.text);
  }),
);

natsTest(
  'an order on one instance drops on the other only the list pages it can change (the scope travels)',
  (t) =>
    withWorld(t, async (world) => {
      const [owner, other] = world.apps;
      const productId = await productOwnedBy(world, owner);
      const heard: Array<{ productId: number; origin?: string; scope?: string }> = [];
      const off = other.bundle.services.events.on('productsChanged', ({ productIds, origin, scope }) => {
        if (productIds.includes(productId)) heard.push({ productId, origin, scope });
      });
      try {
        const showsIt = `/api/v1/products?sellerId=${world.seller.id}&size=100`;
        const unrelated = `/api/v1/products?keyword=no-such-product-${productId}`;
        t.is((await other.request('GET', showsIt)).status, 200);
        t.is((await other.request('GET', unrelated)).status, 200);

        t.is((await order(owner, world.buyer, productId, 3)).status, 201);
        await until(
          () => heard.length > 0,
          1000,
          () => 'the other instance heard nothing',
        );
        t.deepEqual(heard, [{ productId, origin: 'remote', scope: 'stock' }]);

        const cached = await countQueries(other.db, readsProducts, () => other.request('GET', unrelated));
        t.is(cached.result.status, 200);
        t.is(cached.count, 0, 'the page not showing the product is still cached');
        const shown = await other.request('GET', showsIt);
        t.like(
          shown.body.content.find((product: { id: number }) => product.id === productId),
          { stockQuantity: 7, salesCount: 3 },
        );

        // An edit travels without a scope: anything may have changed.
        const edit = await owner.request('PATCH', `/api/v1/products/${productId}`, {
          token: world.seller.token,
          body: { price: 11 },
        });
        t.is(edit.status, 200, edit.text);
        await until(
          () => heard.length > 1,
          1000,
          () => 'the other instance did not hear the edit',
        );
        t.deepEqual(heard[1], { productId, origin: 'remote', scope: undefined });
      } finally {
        off();
      }
    }),
);

natsTest(
  "one tick's announcements travel as one message and arrive as one event per scope, each product's scope kept",
  (t) =>
    withWorld(t, async (world) => {
      const [first, other] = world.apps;
      // Ids no product has: only the events are looked at.
      const base = 2_000_000_000 + Math.floor(Math.random() * 1_000_000);
      const [edited, imaged, sold, both] = [base, base + 1, base + 2, base + 3];
      const heard: Array<{ productIds: number[]; origin?: string; scope?: string }> = [];
      const off = other.bundle.services.events.on('productsChanged', ({ productIds, origin, scope }) => {
        if (productIds.some((id) => id >= base && id <= both))
          heard.push({ productIds: [...productIds], origin, scope });
      });
      try {
        const bus = first.bundle.services.events;
        // In one tick: the bridge sends them in one message (lib/cluster/app-events.ts).
        await Promise.all([
          bus.emit('productsChanged', { productIds: [edited], origin: 'catalog' }),
          bus.emit('productsChanged', { productIds: [imaged, both], origin: 'images', scope: 'images' }),
          bus.emit('productsChanged', { productIds: [sold, both], origin: 'inventory', scope: 'stock' }),
        ]);
        await until(
          () => heard.length >= 3,
          1000,
          () => `the other instance heard ${JSON.stringify(heard)}`,
        );
        // `both` changed in two ways in the tick: anything may have changed.
        t.deepEqual(
          heard.sort((a, b) => String(a.scope).localeCompare(String(b.scope))),
          [
            { productIds: [imaged], origin: 'remote', scope: 'images' },
            { productIds: [sold], origin: 'remote', scope: 'stock' },
            { productIds: [edited, both], origin: 'remote', scope: undefined },
          ],
        );
      } finally {
        off();
      }
    }),
);

natsTest('a shard handed to a joining instance takes its idle actors off the old owner', (t) =>
  withWorld(t, async (world) => {
    const [first] = world.apps;
    const products: number[] = [];
    for (let i = 0; i < 8; i++) products.push(await productOwnedBy(world, first));
    for (const productId of products) t.is((await order(first, world.buyer, productId, 1)).status, 201);
    t.true(products.every((productId) => first.bundle.services.inventory.inspect(productId) !== null));

    const third = await startInstance(world, 'c');
    world.apps.push(third);
    const cluster = first.bundle.services.cluster!;
    await until(
      () => products.some((productId) => !cluster.isOwner(productId)),
      5000,
      () => `the first instance still owns ${cluster.ownedShards().length} shards`,
    );
    await until(
      () =>
        products.every(
          (productId) =>
            cluster.isOwner(productId) || first.bundle.services.inventory.inspect(productId) === null,
        ),
      2000,
      () => 'an actor of a shard that moved away is still active',
    );
    // Once the handover settled (every shard owned once), every product sells again, through any instance.
    await until(
      () =>
        exactlyOnce(
          world.apps.map((app) => app.bundle.services.cluster!),
          16,
          6,
        ),
      5000,
      () => world.apps.map((app) => app.bundle.services.cluster!.ownedShards().length).join(' / '),
    );
    for (const [index, productId] of products.entries()) {
      const placed = await order(world.apps[index % 3], world.buyer, productId, 1);
      t.is(placed.status, 201, placed.text);
    }
    const rows = await first.db('products').whereIn('id', products).select('stock_quantity');
    t.true(rows.every((row: { stock_quantity: number }) => row.stock_quantity === 8));
  }),
);
