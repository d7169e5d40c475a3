// Three real server processes on one database and one cluster: what one instance changes, every instance
// shows within 1 s (product edits, a new category, DRAFT and DELETED products, stock a cancellation gave back, a
// password change ending the old access tokens; the same ETags), orders on any instance after an edit's 200 are charged the new price and name,
// the login throttle is one for all of them (also across a restart), and each outbox event is delivered once
// across every process.
import test, { type ExecutionContext } from 'ava';
import { shardOf } from '../../lib/cluster/shards';
import { natsTest, until } from './cluster-fixtures';
import { orderBody, startClusterWorld, type ClusterWorld, type WorldMember } from './instances';

const A = 0;
const OTHERS = [1, 2];
/** The bound for another instance to show a change, from the change's 2xx. */
const VISIBLE_MS = 1000;

let world: ClusterWorld;
let seller: WorldMember;
let admin: WorldMember;
let buyer: WorldMember;
let categoryId: number;

natsTest('three instances start on one database and one cluster', async (t) => {
  world = await startClusterWorld('coherence');
  [seller, admin, buyer] = await Promise.all([
    world.member('SELLER'),
    world.member('ADMIN'),
    world.member('BUYER'),
  ]);
  categoryId = await world.category();
  t.deepEqual(world.running(), [0, 1, 2]);
  for (const i of world.running()) {
    const res = await world.request(i, 'GET', '/health/ready');
    t.is(res.status, 200, world.instances[i].name);
  }
});

test.after.always(async () => {
  await world?.close();
});

/**
 * Asks every instance in `on` until `check` holds on all of them: each instance must show it to a request
 * sent within 1 s of `since` (on a loaded machine the answer itself may arrive a little later). Returns the
 * time from `since` until the last instance was seen showing it.
 */
async function visibleEverywhere(
  on: number[],
  since: number,
  check: (i: number) => Promise<boolean>,
  what: string,
): Promise<number> {
  const seen = new Set<number>();
  await until(
    async () => {
      for (const i of on) if (!seen.has(i) && (await check(i))) seen.add(i);
      return seen.size === on.length;
    },
    VISIBLE_MS - (Date.now() - since),
    () => `${what}: shown on ${[...seen].map((i) => world.instances[i].name).join(', ') || 'none'}`,
  );
  return Date.now() - since;
}

/** GETs the caches hold, on every instance, so a stale copy would be served if nobody dropped it. */
async function warm(productId: number): Promise<void> {
  for (const i of world.running()) {
    for (const path of [
      `/api/v1/products/${productId}`,
      '/api/v1/products/popular?limit=50',
      `/api/v1/products?categoryId=${categoryId}&size=100`,
      '/api/v1/categories',
    ]) {
      const res = await world.request(i, 'GET', path);
      if (res.status !== 200) throw new Error(`warming ${path}: ${res.status}`);
    }
  }
}

natsTest('a product edit (name, price) on A shows on B and C within 1 s, with the same ETags', async (t) => {
  const productId = await world.product(seller.id, categoryId, { name: 'Plain mug', price: '12.00' });
  await warm(productId);
  const before = await world.request(1, 'GET', `/api/v1/products/${productId}`);
  t.is(before.body.name, 'Plain mug');

  const edit = await world.request(A, 'PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { name: 'Glazed mug', price: 15.5 },
  });
  const since = Date.now();
  t.is(edit.status, 200);
  t.like(edit.body, { id: productId, name: 'Glazed mug', price: 15.5 });

  const edited = (p: { id: number; name: string; price: number }) =>
    p.id === productId && p.name === 'Glazed mug' && p.price === 15.5;
  const ms = await visibleEverywhere(
    OTHERS,
    since,
    async (i) => {
      const [detail, popular, list] = await Promise.all([
        world.request(i, 'GET', `/api/v1/products/${productId}`),
        world.request(i, 'GET', '/api/v1/products/popular?limit=50'),
        world.request(i, 'GET', `/api/v1/products?categoryId=${categoryId}&size=100`),
      ]);
      return (
        detail.status === 200 &&
        edited(detail.body) &&
        popular.status === 200 &&
        popular.body.some(edited) &&
        list.status === 200 &&
        list.body.content.some(edited)
      );
    },
    'the edited product (detail, popular, list)',
  );
  t.log(`edit visible on B and C after ${ms} ms`);

  // One representation, one ETag, whichever instance serves it; the old ETag is no 304 anywhere.
  const details = await Promise.all(
    world.running().map((i) => world.request(i, 'GET', `/api/v1/products/${productId}`)),
  );
  for (const res of details) {
    t.is(res.status, 200);
    t.like(res.body, { name: 'Glazed mug', price: 15.5 });
  }
  const etag = details[0].headers.get('etag');
  t.truthy(etag);
  t.not(etag, before.headers.get('etag'));
  t.deepEqual(
    details.map((res) => res.headers.get('etag')),
    [etag, etag, etag],
  );
  for (const i of OTHERS) {
    const stale = await world.request(i, 'GET', `/api/v1/products/${productId}`, {
      headers: { 'If-None-Match': before.headers.get('etag')! },
    });
    t.is(stale.status, 200, `${world.instances[i].name} answers the old ETag with the new body`);
    t.is(stale.body.name, 'Glazed mug');
    const fresh = await world.request(i, 'GET', `/api/v1/products/${productId}`, {
      headers: { 'If-None-Match': etag! },
    });
    t.is(fresh.status, 304, `${world.instances[i].name} knows A's ETag`);
    t.is(fresh.text, '');
  }
  const popular = await Promise.all(
    world.running().map((i) => world.request(i, 'GET', '/api/v1/products/popular?limit=50')),
  );
  t.is(new Set(popular.map((res) => res.headers.get('etag'))).size, 1, 'popular: one ETag');
});

natsTest('a category created on A is listed on B and C within 1 s, with the same ETag', async (t) => {
  await warm(await world.product(seller.id, categoryId));
  const name = `Teaware ${Date.now()}`;
  const created = await world.request(A, 'POST', '/api/v1/admin/categories', {
    token: admin.token,
    body: { name, displayOrder: 3 },
  });
  const since = Date.now();
  t.is(created.status, 201);
  t.like(created.body, { name, parentId: null, displayOrder: 3 });

  const ms = await visibleEverywhere(
    OTHERS,
    since,
    async (i) => {
      const res = await world.request(i, 'GET', '/api/v1/categories');
      return res.status === 200 && res.body.some((c: { id: number }) => c.id === created.body.id);
    },
    'the new category',
  );
  t.log(`category visible on B and C after ${ms} ms`);
  const lists = await Promise.all(world.running().map((i) => world.request(i, 'GET', '/api/v1/categories')));
  for (const res of lists) {
    t.is(res.status, 200);
    t.deepEqual(
      res.body.find((c: { id: number }) => c.id === created.body.id),
      created.body,
    );
  }
  t.is(new Set(lists.map((res) => res.headers.get('etag'))).size, 1, 'categories: one ETag');
});

natsTest(
  "an instance that forwarded an order shows the order's stock right after its 201, not its cached copy",
  async (t) => {
    // The owner answers before its change event reaches the other instances: the forwarding instance drops its
    // own copies when the answer comes back, so its client reads its own write.
    const owners = await world.settled();
    const names = world.instances.map((instance) => instance.name);
    for (let round = 0; round < 30; round++) {
      const productId = await world.product(seller.id, categoryId, { stock: 1 });
      const owner = owners.get(shardOf(productId, 64));
      const via = names.findIndex((name) => name !== owner);
      const path = `/api/v1/products/${productId}`;
      t.like((await world.request(via, 'GET', path)).body, { stockQuantity: 1, status: 'ON_SALE' });
      const placed = await world.request(via, 'POST', '/api/v1/orders', {
        token: buyer.token,
        body: orderBody([{ productId, quantity: 1 }]),
      });
      t.is(placed.status, 201, placed.text);
      t.like(
        (await world.request(via, 'GET', path)).body,
        { stockQuantity: 0, status: 'SOLD_OUT' },
        `round ${round}, ordered through ${names[via]}, owner ${owner}`,
      );
    }
  },
);

natsTest(
  'a cancellation on an instance that does not own the product gives its stock back everywhere within 1 s',
  async (t) => {
    const owners = await world.settled();
    const productId = await world.product(seller.id, categoryId, { stock: 1 });
    const owner = world
      .running()
      .find((i) => world.instances[i].name === owners.get(shardOf(productId, 64)))!;
    const other = world.running().find((i) => i !== owner)!;
    const path = `/api/v1/products/${productId}`;
    const placed = await world.placeOrder(owner, buyer.token, orderBody([{ productId, quantity: 1 }]));
    t.is(placed.status, 201, placed.text);
    const soldOut = await world.placeOrder(other, buyer.token, orderBody([{ productId, quantity: 1 }]));
    t.like(soldOut.body, { status: 409, code: 'INSUFFICIENT_STOCK' });
    for (const i of world.running())
      t.like((await world.request(i, 'GET', path)).body, { stockQuantity: 0, status: 'SOLD_OUT' });

    // Cancelled where the product's actor does not live: the owner learns of the stock only through the cluster.
    const cancelled = await world.request(
      other,
      'POST',
      `/api/v1/orders/${placed.body.orders[0].id}/cancel`,
      { token: buyer.token },
    );
    const since = Date.now();
    t.is(cancelled.status, 200, cancelled.text);
    t.is(cancelled.body.status, 'CANCELLED');
    await visibleEverywhere(
      world.running(),
      since,
      async (i) => {
        const res = await world.request(i, 'GET', path);
        return res.body.stockQuantity === 1 && res.body.status === 'ON_SALE';
      },
      'the restored stock',
    );
    // Sold again, through the owner's actor, from either instance.
    const again = await world.placeOrder(other, buyer.token, orderBody([{ productId, quantity: 1 }]));
    t.is(again.status, 201, again.text);
    const row = await world.db('products').where('id', productId).first('stock_quantity', 'sales_count');
    t.deepEqual({ stock: Number(row.stock_quantity), sold: Number(row.sales_count) }, { stock: 0, sold: 1 });
  },
);

natsTest('a product set to DRAFT on A is 404 on B and C within 1 s', async (t) => {
  const productId = await world.product(seller.id, categoryId);
  await warm(productId);
  const draft = await world.request(A, 'PATCH', `/api/v1/products/${productId}`, {
    token: seller.token,
    body: { status: 'DRAFT' },
  });
  const since = Date.now();
  t.is(draft.status, 200);
  t.is(draft.body.status, 'DRAFT');
  await hiddenEverywhere(t, productId, since, 'DRAFT');
  // its seller still sees it, on every instance
  for (const i of world.running()) {
    const own = await world.request(i, 'GET', `/api/v1/products/${productId}`, { token: seller.token });
    t.is(own.status, 200);
    t.is(own.body.status, 'DRAFT');
  }
});

natsTest("a password change on A ends the member's access tokens on B and C within 1 s", async (t) => {
  const member = await world.member('BUYER');
  // Every instance caches the member's token version (30 s by default) from these requests.
  for (const i of world.running()) {
    t.is((await world.request(i, 'GET', '/api/v1/members/me', { token: member.token })).status, 200);
  }
  const changed = await world.request(A, 'PATCH', '/api/v1/members/me', {
    token: member.token,
    body: { password: 'New-password-1', currentPassword: member.password },
  });
  const since = Date.now();
  t.is(changed.status, 200, changed.text);
  const refused = await world.request(A, 'GET', '/api/v1/members/me', { token: member.token });
  t.is(refused.status, 401);
  t.is(refused.body.code, 'INVALID_TOKEN');
  await visibleEverywhere(
    OTHERS,
    since,
    async (i) => {
      const res = await world.request(i, 'GET', '/api/v1/members/me', { token: member.token });
      return res.status === 401 && res.body.code === 'INVALID_TOKEN';
    },
    'the old access token refused',
  );
});

natsTest('a product DELETED on A is 404 on B and C within 1 s', async (t) => {
  const productId = await world.product(seller.id, categoryId);
  await warm(productId);
  const deleted = await world.request(A, 'DELETE', `/api/v1/products/${productId}`, {
    token: seller.token,
  });
  const since = Date.now();
  t.is(deleted.status, 204);
  await hiddenEverywhere(t, productId, since, 'DELETED');
  const order = await world.request(1, 'POST', '/api/v1/orders', {
    token: buyer.token,
    body: orderBody([{ productId, quantity: 1 }]),
  });
  t.is(order.status, 404);
  t.is(order.body.code, 'NOT_FOUND');
});

async function hiddenEverywhere(
  t: ExecutionContext,
  productId: number,
  since: number,
  what: string,
): Promise<void> {
  const listed = (p: { id: number }) => p.id === productId;
  const ms = await visibleEverywhere(
    OTHERS,
    since,
    async (i) => {
      const [detail, popular, list] = await Promise.all([
        world.request(i, 'GET', `/api/v1/products/${productId}`),
        world.request(i, 'GET', '/api/v1/products/popular?limit=50'),
        world.request(i, 'GET', `/api/v1/products?categoryId=${categoryId}&size=100`),
      ]);
      return detail.status === 404 && !popular.body.some(listed) && !list.body.content.some(listed);
    },
    `the ${what} product hidden (detail 404, not in popular or the list)`,
  );
  t.log(`${what} hidden on B and C after ${ms} ms`);
  for (const i of world.running()) {
    const res = await world.request(i, 'GET', `/api/v1/products/${productId}`);
    t.is(res.status, 404, world.instances[i].name);
    t.like(res.body, { status: 404, code: 'NOT_FOUND' });
  }
}

natsTest(
  'every order placed on any instance after the edit’s 200 is charged the new price and name',
  async (t) => {
    const productId = await world.product(seller.id, categoryId, {
      name: 'Old tea',
      price: '7.00',
      stock: 500,
    });
    // The edit is made on an instance that does not own the product's shard: the owner learns of it only
    // through the cluster (its event, or the catalog version its guarded UPDATE checks).
    const owner = (await world.owners()).get(productId % 64);
    const editor = world.running().find((i) => world.instances[i].name !== owner)!;
    t.truthy(owner);
    // every instance has placed an order on this product: a stale view would show now
    for (const i of world.running()) {
      const res = await world.placeOrder(i, buyer.token, orderBody([{ productId, quantity: 1 }]));
      t.is(res.status, 201);
      t.like(res.body.orders[0].items[0], { productName: 'Old tea', productPrice: 7 });
    }
    const edit = await world.request(editor, 'PATCH', `/api/v1/products/${productId}`, {
      token: seller.token,
      body: { name: 'New tea', price: 9.25 },
    });
    t.is(edit.status, 200);
    t.like(edit.body, { name: 'New tea', price: 9.25 });

    // at once, one on each instance (the owner first), then many in parallel across all of them
    const sequential = [];
    const ownerIndex = world.running().find((i) => world.instances[i].name === owner)!;
    for (const i of [ownerIndex, ...world.running().filter((i) => i !== ownerIndex)]) {
      sequential.push(await world.placeOrder(i, buyer.token, orderBody([{ productId, quantity: 2 }])));
    }
    const parallel = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        world.placeOrder(n % 3, buyer.token, orderBody([{ productId, quantity: 1 }])),
      ),
    );
    for (const res of [...sequential, ...parallel]) {
      t.is(res.status, 201, JSON.stringify(res.body));
      const [order] = res.body.orders;
      const [item] = order.items;
      t.like(item, { productId, productName: 'New tea', productPrice: 9.25 });
      t.is(order.totalAmount, Number((9.25 * item.quantity).toFixed(2)));
    }
    const rows = (await world
      .db('order_items')
      .where('product_id', productId)
      .select('product_name', 'product_price', 'quantity')) as Array<{
      product_name: string;
      product_price: string;
    }>;
    t.is(rows.length, 3 + 3 + 12);
    t.is(
      rows.filter((row) => row.product_name === 'New tea' && Number(row.product_price) === 9.25).length,
      15,
    );
  },
);

natsTest(
  'the login throttle is shared: 5 failures over the instances lock every one, also after a restart',
  async (t) => {
    const member = await world.member('BUYER', 'Right-password-1');
    const login = (i: number, password: string) =>
      world.request(i, 'POST', '/api/v1/auth/login', { body: { email: member.email, password } });

    for (let n = 0; n < 5; n++) {
      const res = await login(n % 3, 'Wrong-password-1');
      t.is(res.status, 401, `failure ${n + 1} on ${world.instances[n % 3].name}`);
      t.is(res.body.code, 'INVALID_CREDENTIALS');
    }
    const locked = async (i: number, password: string) => {
      const res = await login(i, password);
      t.is(res.status, 429, `${world.instances[i].name}: ${JSON.stringify(res.body)}`);
      t.like(res.body, { status: 429, code: 'TOO_MANY_REQUESTS', path: '/api/v1/auth/login' });
      t.true(Number(res.headers.get('retry-after')) > 0, 'Retry-After in seconds');
    };
    for (const i of world.running()) {
      await locked(i, 'Wrong-password-1');
      await locked(i, 'Right-password-1'); // the right password too: the pair is locked
    }

    await world.terminate(1);
    await world.restart(1);
    await locked(1, 'Right-password-1');
    t.regex(world.output(), /SIGTERM received, shutting down/);
    await world.settled(); // the next test starts on a settled cluster
  },
);

natsTest('each outbox event is delivered once across every process', async (t) => {
  const productIds = await Promise.all(
    Array.from({ length: 4 }, () => world.product(seller.id, categoryId, { stock: 1000 })),
  );
  const responses = await Promise.all(
    Array.from({ length: 24 }, (_, n) =>
      world.placeOrder(
        world.next(),
        buyer.token,
        orderBody([{ productId: productIds[n % 4], quantity: 1 }], `outbox-${n}`),
      ),
    ),
  );
  for (const retried of responses.flatMap((res) => res.retried))
    t.log(`503 retried with the same Idempotency-Key: ${retried}`);
  for (const res of responses) t.is(res.status, 201, JSON.stringify(res.body));
  const orderIds = new Set(responses.flatMap((res) => res.body.orders.map((o: { id: number }) => o.id)));
  t.is(orderIds.size, 24);

  const rowsOf = async () =>
    (
      (await world
        .db('notification_outbox')
        .where('event_type', 'OrderCreated')
        .select('id', 'payload', 'recipient_id', 'delivered_at')) as Array<{
        id: number;
        payload: string;
        recipient_id: number;
        delivered_at: Date | null;
      }>
    ).filter((row) => orderIds.has((JSON.parse(row.payload) as { orderId: number }).orderId));
  const deliveryLines = () => [
    ...world.output().matchAll(/Delivered OrderCreated for order (\d+) to member (\d+) \(outbox (\d+)\)/g),
  ];
  // A process logs its delivery after the commit that marks the row, and the line reaches this process
  // through a pipe: wait for both, then a moment more, so that a second delivery would be seen too.
  await until(
    async () => {
      const logged = new Set(deliveryLines().map(([, , , outbox]) => Number(outbox)));
      return (await rowsOf()).every((row) => row.delivered_at !== null && logged.has(Number(row.id)));
    },
    15_000,
    () => 'every OrderCreated row of these orders delivered and its delivery logged',
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  const rows = await rowsOf();
  t.true(rows.length >= 24, 'at least one OrderCreated row per order');

  const lines = deliveryLines();
  const times = new Map<number, number>();
  for (const [, , , outbox] of lines) times.set(Number(outbox), (times.get(Number(outbox)) ?? 0) + 1);
  for (const row of rows) t.is(times.get(Number(row.id)), 1, `outbox ${row.id} delivered once`);
  // and no line names a delivery of these orders that the database does not have
  const named = lines.filter(([, order]) => orderIds.has(Number(order)));
  t.is(named.length, rows.length);
  for (const [, order, member, outbox] of named) {
    const row = rows.find((r) => Number(r.id) === Number(outbox));
    t.truthy(row, `outbox ${outbox} exists`);
    t.is(Number(row?.recipient_id), Number(member));
    t.is((JSON.parse(row!.payload) as { orderId: number }).orderId, Number(order));
  }
  const inbox = await world
    .db('notifications')
    .whereIn(
      'outbox_id',
      rows.map((row) => row.id),
    )
    .count({ n: '*' });
  t.is(Number(inbox[0].n), rows.length, 'one notification per outbox row');
});
