// The order rules, as one suite run against both inventory modes (test/routes/orders*.test.ts): same API,
// same guarantees. Each test makes its own members and products.
import test from 'ava';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { address, eventually, orderBody, placeOrder, productRow, world } from './order-fixtures';

export function orderRulesSuite(mode: 'actor' | 'transactional'): void {
  let app: TestApp;
  test.before(async () => {
    app = await startTestApp({ env: { INVENTORY_MODE: mode }, logLevel: 'info' });
  });
  test.after.always(async () => {
    await app?.close();
  });

  test('a buyer places an order: 201, API.md order JSON with snapshots and history, stock and salesCount deducted', async (t) => {
    const { buyer, seller, product } = await world(app);
    const productId = await product({ name: 'Lamp', price: '12.34', stockQuantity: 5 });
    const res = await placeOrder(app, buyer.token, [{ productId, quantity: 2 }]);
    t.is(res.status, 201);
    t.is(res.body.orders.length, 1);
    const order = res.body.orders[0];
    t.regex(order.orderNumber, /^\d{8}-[0-9A-HJKMNP-TV-Z]{12}$/);
    t.like(order, { buyerId: buyer.id, status: 'PENDING', totalAmount: 24.68, shippingAddress: address });
    t.deepEqual(
      order.items.map(({ id, ...rest }: { id: number }) => (t.true(Number.isInteger(id)), rest)),
      [
        {
          productId,
          sellerId: seller.id,
          productName: 'Lamp',
          productPrice: 12.34,
          quantity: 2,
          subtotal: 24.68,
        },
      ],
    );
    t.is(order.statusHistory.length, 1);
    t.like(order.statusHistory[0], { from: null, to: 'PENDING', changedBy: buyer.id });
    t.is(order.orderedAt, order.updatedAt);
    t.regex(order.orderedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.deepEqual(await productRow(app, productId), { stock: 3, status: 'ON_SALE', salesCount: 2 });
    // the product name and price are snapshots: a later edit does not change the order
    await app.db('products').where('id', productId).update({ name: 'Renamed', price: '99.00' });
    const read = await app.request('GET', `/api/v1/orders/${order.id}`, { token: buyer.token });
    t.is(read.status, 200);
    t.deepEqual(read.body, order);
  });

  test('a cart over two sellers makes one order per seller; the last unit turns the product SOLD_OUT', async (t) => {
    const { buyer, product } = await world(app);
    const other = await createMember(app, 'SELLER');
    const a = await product({ stockQuantity: 1, price: '1.10' });
    const b = await product({ stockQuantity: 4, price: '2.20' });
    const c = await createProduct(app, other.id, { stockQuantity: 3, price: '0.35' });
    const res = await placeOrder(app, buyer.token, [
      { productId: c, quantity: 3 },
      { productId: a, quantity: 1 },
      { productId: b, quantity: 2 },
    ]);
    t.is(res.status, 201);
    t.is(res.body.orders.length, 2);
    const bySeller = new Map(res.body.orders.map((o: any) => [o.items[0].sellerId, o]));
    const mine: any = [...bySeller.values()].find((o: any) => o.items.length === 2);
    const theirs: any = bySeller.get(other.id);
    t.deepEqual(mine.items.map((i: any) => i.productId).sort(), [a, b].sort());
    t.is(mine.totalAmount, 5.5);
    t.is(theirs.totalAmount, 1.05);
    t.not(mine.orderNumber, theirs.orderNumber);
    t.deepEqual(await productRow(app, a), { stock: 0, status: 'SOLD_OUT', salesCount: 1 });
    t.deepEqual(await productRow(app, c), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
    const again = await placeOrder(app, buyer.token, [{ productId: a, quantity: 1 }]);
    t.is(again.status, 409);
    t.is(again.body.code, 'INSUFFICIENT_STOCK');
  });

  test('all-or-nothing: one short product -> 409 INSUFFICIENT_STOCK naming it, nothing deducted or written', async (t) => {
    const { buyer, product } = await world(app);
    const plenty = await product({ stockQuantity: 10 });
    const short = await product({ stockQuantity: 2, name: 'Scarce thing' });
    const before = await app.db('orders').where('buyer_id', buyer.id).count({ n: '*' }).first();
    const res = await placeOrder(app, buyer.token, [
      { productId: plenty, quantity: 5 },
      { productId: short, quantity: 3 },
    ]);
    t.is(res.status, 409);
    t.is(res.body.code, 'INSUFFICIENT_STOCK');
    t.true(
      res.body.message.includes(String(short)) && res.body.message.includes('Scarce thing'),
      res.body.message,
    );
    t.is(res.body.path, '/api/v1/orders');
    t.deepEqual(await productRow(app, plenty), { stock: 10, status: 'ON_SALE', salesCount: 0 });
    t.deepEqual(await productRow(app, short), { stock: 2, status: 'ON_SALE', salesCount: 0 });
    const after = await app.db('orders').where('buyer_id', buyer.id).count({ n: '*' }).first();
    t.is(Number(after!.n), Number(before!.n));
    // the reservation was released: the same stock can be bought right away
    const ok = await placeOrder(app, buyer.token, [{ productId: plenty, quantity: 10 }]);
    t.is(ok.status, 201);
  });

  test('only ON_SALE products: DRAFT -> 409 PRODUCT_NOT_ON_SALE; deleted or unknown -> 404', async (t) => {
    const { buyer, product } = await world(app);
    const draft = await product({ status: 'DRAFT' });
    const deleted = await product({ status: 'DELETED' });
    const fine = await product();
    const res = await placeOrder(app, buyer.token, [
      { productId: fine, quantity: 1 },
      { productId: draft, quantity: 1 },
    ]);
    t.is(res.status, 409);
    t.is(res.body.code, 'PRODUCT_NOT_ON_SALE');
    const gone = await placeOrder(app, buyer.token, [{ productId: deleted, quantity: 1 }]);
    t.is(gone.status, 404);
    t.is(gone.body.code, 'NOT_FOUND');
    const unknown = await placeOrder(app, buyer.token, [{ productId: 987654, quantity: 1 }]);
    t.is(unknown.status, 404);
    t.is(unknown.body.code, 'NOT_FOUND');
    t.deepEqual(await productRow(app, fine), { stock: 10, status: 'ON_SALE', salesCount: 0 });
  });

  test('order body validation: 400 VALIDATION_ERROR naming the field', async (t) => {
    const { buyer, product } = await world(app);
    const p = await product();
    const cases: Array<[unknown, string]> = [
      [orderBody([{ productId: p, quantity: 0 }]), 'orderItems[0].quantity'],
      [orderBody([{ productId: p, quantity: 1001 }]), 'orderItems[0].quantity'],
      [orderBody([{ productId: p, quantity: 1.5 }]), 'orderItems[0].quantity'],
      [orderBody([{ productId: p, quantity: '2' } as any]), 'orderItems[0].quantity'],
      [orderBody([{ productId: 'x', quantity: 1 } as any]), 'orderItems[0].productId'],
      [orderBody([]), 'orderItems'],
      [
        orderBody([
          { productId: p, quantity: 1 },
          { productId: p, quantity: 2 },
        ]),
        'orderItems',
      ],
      [{ orderItems: [{ productId: p, quantity: 1 }] }, 'shippingAddress'],
      [
        { ...orderBody([{ productId: p, quantity: 1 }]), shippingAddress: { ...address, zipCode: 12345 } },
        'shippingAddress.zipCode',
      ],
      [
        {
          ...orderBody([{ productId: p, quantity: 1 }]),
          shippingAddress: { ...address, receiverName: '  ' },
        },
        'shippingAddress.receiverName',
      ],
      [{ ...orderBody([{ productId: p, quantity: 1 }]), status: 'DELIVERED' }, 'status'],
      [{ ...orderBody([{ productId: p, quantity: 1, price: 1 } as any]) }, 'orderItems[0].price'],
    ];
    for (const [body, field] of cases) {
      const res = await app.request('POST', '/api/v1/orders', { token: buyer.token, body });
      t.is(res.status, 400, JSON.stringify(body));
      t.is(res.body.code, 'VALIDATION_ERROR');
      t.true(
        res.body.errors.some((e: { field: string }) => e.field === field),
        `${field} in ${JSON.stringify(res.body.errors)}`,
      );
    }
    t.deepEqual(await productRow(app, p), { stock: 10, status: 'ON_SALE', salesCount: 0 });
    // addressDetail may be empty (the only optional part of an address), but must be present
    const noDetail = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: {
        ...orderBody([{ productId: p, quantity: 1 }]),
        shippingAddress: { ...address, addressDetail: '' },
      },
    });
    t.is(noDetail.status, 201);
    t.is(noDetail.body.orders[0].shippingAddress.addressDetail, '');
    const { addressDetail: _omitted, ...withoutDetail } = address;
    const missing = await app.request('POST', '/api/v1/orders', {
      token: buyer.token,
      body: { ...orderBody([{ productId: p, quantity: 1 }]), shippingAddress: withoutDetail },
    });
    t.is(missing.status, 400);
    t.deepEqual(missing.body.errors, [
      { field: 'shippingAddress.addressDetail', message: 'shippingAddress.addressDetail is required' },
    ]);
  });

  test('only buyers order: seller 403, no token 401', async (t) => {
    const { seller, product } = await world(app);
    const p = await product();
    const asSeller = await placeOrder(app, seller.token, [{ productId: p, quantity: 1 }]);
    t.is(asSeller.status, 403);
    t.is(asSeller.body.code, 'FORBIDDEN');
    const anonymous = await app.request('POST', '/api/v1/orders', {
      body: orderBody([{ productId: p, quantity: 1 }]),
    });
    t.is(anonymous.status, 401);
    t.is(anonymous.body.code, 'UNAUTHENTICATED');
  });

  test('the seller moves an order exactly one step forward; anything else is 409 INVALID_STATUS_TRANSITION', async (t) => {
    const { buyer, seller, product } = await world(app);
    const p = await product();
    const order = (await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }])).body.orders[0];
    const patch = (status: string, token = seller.token, id = order.id) =>
      app.request('PATCH', `/api/v1/sellers/orders/${id}/status`, { token, body: { status } });

    for (const target of ['SHIPPED', 'DELIVERED', 'PENDING', 'CANCELLED']) {
      const res = await patch(target);
      t.is(res.status, 409, target);
      t.is(res.body.code, 'INVALID_STATUS_TRANSITION');
    }
    const stranger = await createMember(app, 'SELLER');
    const forbidden = await patch('CONFIRMED', stranger.token);
    t.is(forbidden.status, 403);
    t.is(forbidden.body.code, 'FORBIDDEN');
    t.is((await patch('CONFIRMED', buyer.token)).status, 403);
    t.is((await patch('CONFIRMED', seller.token, 99999999)).status, 404);
    // Not an order status at all: a validation error, not a transition (the document says so).
    t.like((await patch('confirmed')).body, { status: 400, code: 'VALIDATION_ERROR' });
    t.is(
      (
        await app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
          token: seller.token,
          body: { status: 'CONFIRMED', x: 1 },
        })
      ).status,
      400,
    );

    const confirmed = await patch('CONFIRMED');
    t.is(confirmed.status, 200);
    t.is(confirmed.body.status, 'CONFIRMED');
    t.is((await patch('CONFIRMED')).body.code, 'INVALID_STATUS_TRANSITION');
    t.is((await patch('SHIPPED')).body.status, 'SHIPPED');
    const delivered = await patch('DELIVERED');
    t.is(delivered.status, 200);
    t.deepEqual(
      delivered.body.statusHistory.map((h: any) => [h.from, h.to, h.changedBy]),
      [
        [null, 'PENDING', buyer.id],
        ['PENDING', 'CONFIRMED', seller.id],
        ['CONFIRMED', 'SHIPPED', seller.id],
        ['SHIPPED', 'DELIVERED', seller.id],
      ],
    );
    t.is((await patch('DELIVERED')).status, 409);
    const cancel = await app.request('POST', `/api/v1/orders/${order.id}/cancel`, { token: buyer.token });
    t.is(cancel.status, 409);
    t.is(cancel.body.code, 'ORDER_NOT_CANCELLABLE');
  });

  test('the buyer cancels from PENDING or CONFIRMED: stock and salesCount restored, SOLD_OUT lifted, exactly once', async (t) => {
    const { buyer, seller, product } = await world(app);
    const p = await product({ stockQuantity: 3 });
    const first = (await placeOrder(app, buyer.token, [{ productId: p, quantity: 3 }])).body.orders[0];
    t.deepEqual(await productRow(app, p), { stock: 0, status: 'SOLD_OUT', salesCount: 3 });
    const other = await createMember(app, 'BUYER');
    const notOwner = await app.request('POST', `/api/v1/orders/${first.id}/cancel`, { token: other.token });
    t.is(notOwner.status, 403);
    t.is(notOwner.body.code, 'FORBIDDEN');
    t.is(
      (await app.request('POST', `/api/v1/orders/${first.id}/cancel`, { token: seller.token })).status,
      403,
    );
    t.is((await app.request('POST', '/api/v1/orders/99999999/cancel', { token: buyer.token })).status, 404);

    const cancelled = await app.request('POST', `/api/v1/orders/${first.id}/cancel`, { token: buyer.token });
    t.is(cancelled.status, 200);
    t.is(cancelled.body.status, 'CANCELLED');
    t.deepEqual(cancelled.body.statusHistory.at(-1).from, 'PENDING');
    t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 0 });
    const twice = await app.request('POST', `/api/v1/orders/${first.id}/cancel`, { token: buyer.token });
    t.is(twice.status, 409);
    t.is(twice.body.code, 'ORDER_NOT_CANCELLABLE');
    t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 0 });
    t.is(
      (
        await app.request('PATCH', `/api/v1/sellers/orders/${first.id}/status`, {
          token: seller.token,
          body: { status: 'CONFIRMED' },
        })
      ).status,
      409,
    );

    // the restored stock can be sold again (the actor knows about it), and a CONFIRMED order is cancellable
    const second = (await placeOrder(app, buyer.token, [{ productId: p, quantity: 3 }])).body.orders[0];
    t.truthy(second);
    await app.request('PATCH', `/api/v1/sellers/orders/${second.id}/status`, {
      token: seller.token,
      body: { status: 'CONFIRMED' },
    });
    const fromConfirmed = await app.request('POST', `/api/v1/orders/${second.id}/cancel`, {
      token: buyer.token,
    });
    t.is(fromConfirmed.status, 200);
    t.deepEqual(
      fromConfirmed.body.statusHistory.map((h: any) => h.to),
      ['PENDING', 'CONFIRMED', 'CANCELLED'],
    );
    t.deepEqual(await productRow(app, p), { stock: 3, status: 'ON_SALE', salesCount: 0 });
  });

  test('reading orders: own list with status filter and pages; one order for buyer, its seller or an admin only', async (t) => {
    const { buyer, seller, product } = await world(app);
    const p = await product({ stockQuantity: 100 });
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }])).body.orders[0].id);
    await app.request('POST', `/api/v1/orders/${ids[0]}/cancel`, { token: buyer.token });

    const page = await app.request('GET', '/api/v1/orders?page=0&size=2', { token: buyer.token });
    t.is(page.status, 200);
    t.like(page.body, { page: 0, size: 2, totalElements: 3, totalPages: 2, hasNext: true });
    t.deepEqual(
      page.body.content.map((o: any) => o.id),
      [ids[2], ids[1]],
    );
    t.is(page.body.content[0].items.length, 1);
    const cancelled = await app.request('GET', '/api/v1/orders?status=CANCELLED', { token: buyer.token });
    t.deepEqual(
      cancelled.body.content.map((o: any) => o.id),
      [ids[0]],
    );
    t.is((await app.request('GET', '/api/v1/orders?status=LOST', { token: buyer.token })).status, 400);
    t.is((await app.request('GET', '/api/v1/orders?size=101', { token: buyer.token })).status, 400);
    t.is((await app.request('GET', '/api/v1/orders')).status, 401);

    const other = await createMember(app, 'BUYER');
    t.is((await app.request('GET', '/api/v1/orders', { token: other.token })).body.totalElements, 0);

    const admin = await createMember(app, 'ADMIN');
    const strangerSeller = await createMember(app, 'SELLER');
    for (const [who, token, status] of [
      ['buyer', buyer.token, 200],
      ['seller', seller.token, 200],
      ['admin', admin.token, 200],
      ['other buyer', other.token, 403],
      ['other seller', strangerSeller.token, 403],
    ] as const) {
      const res = await app.request('GET', `/api/v1/orders/${ids[1]}`, { token });
      t.is(res.status, status, who);
      if (status === 200) t.is(res.body.id, ids[1]);
      else t.is(res.body.code, 'FORBIDDEN');
    }
    const missing = await app.request('GET', '/api/v1/orders/99999999', { token: buyer.token });
    t.is(missing.status, 404);
    t.is(missing.body.code, 'NOT_FOUND');
    t.is((await app.request('GET', '/api/v1/orders/abc', { token: buyer.token })).status, 400);
  });

  test('GET /sellers/orders lists the orders containing the caller products only', async (t) => {
    const { buyer, seller, product } = await world(app);
    const other = await createMember(app, 'SELLER');
    const mine = await product();
    const theirs = await createProduct(app, other.id);
    const both = (
      await placeOrder(app, buyer.token, [
        { productId: mine, quantity: 1 },
        { productId: theirs, quantity: 1 },
      ])
    ).body.orders;
    const myOrder = both.find((o: any) => o.items[0].sellerId === seller.id);
    const res = await app.request('GET', '/api/v1/sellers/orders', { token: seller.token });
    t.is(res.status, 200);
    t.deepEqual(
      res.body.content.map((o: any) => o.id),
      [myOrder.id],
    );
    t.like(res.body, { totalElements: 1, page: 0, size: 20, hasNext: false });
    const pending = await app.request('GET', '/api/v1/sellers/orders?status=SHIPPED', {
      token: seller.token,
    });
    t.is(pending.body.totalElements, 0);
    t.is((await app.request('GET', '/api/v1/sellers/orders', { token: buyer.token })).status, 403);
  });

  test('Idempotency-Key: a repeat returns the first response and creates nothing; another body -> 409', async (t) => {
    const { buyer, product } = await world(app);
    const p = await product({ stockQuantity: 10 });
    const headers = { 'Idempotency-Key': `key-${p}` };
    const first = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }], headers);
    t.is(first.status, 201);
    const again = await placeOrder(app, buyer.token, [{ productId: p, quantity: 2 }], headers);
    t.is(again.status, 201);
    t.deepEqual(again.body, first.body);
    t.is(again.headers.get('idempotent-replayed'), 'true');
    t.deepEqual(await productRow(app, p), { stock: 8, status: 'ON_SALE', salesCount: 2 });
    const reused = await placeOrder(app, buyer.token, [{ productId: p, quantity: 3 }], headers);
    t.is(reused.status, 409);
    t.is(reused.body.code, 'IDEMPOTENCY_KEY_REUSED');
    // keys are per buyer: another buyer's same key is a new request
    const other = await createMember(app, 'BUYER');
    const theirs = await placeOrder(app, other.token, [{ productId: p, quantity: 2 }], headers);
    t.is(theirs.status, 201);
    t.not(theirs.body.orders[0].id, first.body.orders[0].id);
    // a failed attempt frees its key
    const failKey = { 'Idempotency-Key': `fail-${p}` };
    t.is((await placeOrder(app, buyer.token, [{ productId: p, quantity: 1000 }], failKey)).status, 409);
    t.is((await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], failKey)).status, 201);
    // concurrent duplicates with one key -> one order
    const key = { 'Idempotency-Key': `burst-${p}` };
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], key)),
    );
    t.deepEqual(
      burst.map((r) => r.status),
      Array(8).fill(201),
    );
    t.is(new Set(burst.map((r) => r.body.orders[0].id)).size, 1);
    // 10 - 2 (first) - 2 (other buyer) - 1 (freed key) - 1 (burst)
    t.deepEqual(await productRow(app, p), { stock: 4, status: 'ON_SALE', salesCount: 6 });
    const bad = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], {
      'Idempotency-Key': 'x'.repeat(256),
    });
    t.is(bad.status, 400);
    t.is(bad.body.code, 'VALIDATION_ERROR');
  });

  test("notifications: OrderCreated to the seller, OrderStatusChanged to the buyer for the seller's steps, none for the buyer's cancel, logged with the request id", async (t) => {
    const { buyer, seller, product } = await world(app);
    const p = await product();
    const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }], {
      'X-Request-Id': `place-${p}`,
    });
    const order = placed.body.orders[0];
    const sellerNotes = await eventually(async () => {
      const res = await app.request('GET', '/api/v1/notifications', { token: seller.token });
      return res.body.totalElements > 0 && res.body;
    });
    t.is(sellerNotes.content.length, 1);
    t.like(sellerNotes.content[0], {
      type: 'OrderCreated',
      payload: { sellerId: seller.id, orderId: order.id, orderNumber: order.orderNumber },
      readAt: null,
    });
    t.true(
      app.logs.lines.some((line) =>
        line.includes(`[place-${p}] [NotificationDispatcher] Delivered OrderCreated`),
      ),
    );

    await app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
      token: seller.token,
      body: { status: 'CONFIRMED' },
      headers: { 'X-Request-Id': `confirm-${p}` },
    });
    for (const status of ['SHIPPED', 'DELIVERED']) {
      const stepped = await app.request('PATCH', `/api/v1/sellers/orders/${order.id}/status`, {
        token: seller.token,
        body: { status },
      });
      t.is(stepped.status, 200, stepped.text);
    }
    const buyerNotes = await eventually(async () => {
      const res = await app.request('GET', '/api/v1/notifications?size=1', { token: buyer.token });
      return res.body.totalElements === 3 && res.body;
    });
    t.like(buyerNotes, { size: 1, totalElements: 3, totalPages: 3, hasNext: true });
    t.like(buyerNotes.content[0], {
      type: 'OrderStatusChanged',
      payload: { buyerId: buyer.id, orderId: order.id, from: 'SHIPPED', to: 'DELIVERED' },
    });
    const older = await app.request('GET', '/api/v1/notifications?page=1&size=1', { token: buyer.token });
    t.like(older.body.content[0], { payload: { from: 'CONFIRMED', to: 'SHIPPED' } });
    const oldest = await app.request('GET', '/api/v1/notifications?page=2&size=1', { token: buyer.token });
    t.like(oldest.body, { hasNext: false });
    t.like(oldest.body.content[0], { payload: { from: 'PENDING', to: 'CONFIRMED' } });

    // The buyer's own cancellation (from PENDING or CONFIRMED) emits no event: the spec's list is closed.
    const cancelledOrders: number[] = [];
    for (const confirm of [false, true]) {
      const other = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
      const otherId = other.body.orders[0].id;
      if (confirm) {
        const confirmed = await app.request('PATCH', `/api/v1/sellers/orders/${otherId}/status`, {
          token: seller.token,
          body: { status: 'CONFIRMED' },
        });
        t.is(confirmed.status, 200);
      }
      const cancelled = await app.request('POST', `/api/v1/orders/${otherId}/cancel`, { token: buyer.token });
      t.is(cancelled.status, 200, cancelled.text);
      cancelledOrders.push(otherId);
    }
    await app.bundle.services.dispatcher.idle();
    const statusEvents = (await app
      .db('notification_outbox')
      .where('event_type', 'OrderStatusChanged')
      .select('payload')) as Array<{ payload: string }>;
    const aboutCancelled = statusEvents.filter((row) => {
      const payload = JSON.parse(row.payload);
      return cancelledOrders.includes(payload.orderId) && payload.to === 'CANCELLED';
    });
    t.deepEqual(aboutCancelled, [], 'no OrderStatusChanged for a cancellation, to anyone');
    // The buyer's: the first order's three steps and the second one's confirmation.
    t.is((await app.request('GET', '/api/v1/notifications', { token: buyer.token })).body.totalElements, 4);
    const confirmLine = `[confirm-${p}] [NotificationDispatcher] Delivered OrderStatusChanged PENDING -> CONFIRMED`;
    t.true(
      app.logs.lines.some((line) => line.includes(confirmLine)),
      app.logs.lines.filter((line) => line.includes('NotificationDispatcher')).join('\n'),
    );
    // the seller sees only their own: the three orders' OrderCreated
    const sellerAgain = await app.request('GET', '/api/v1/notifications', { token: seller.token });
    t.is(sellerAgain.body.totalElements, 3);
    t.true(sellerAgain.body.content.every((note: { type: string }) => note.type === 'OrderCreated'));
    t.is((await app.request('GET', '/api/v1/notifications')).status, 401);
    t.is((await app.request('GET', '/api/v1/notifications?page=-1', { token: buyer.token })).status, 400);
  });

  test('every stock change is announced on the event bus after commit, its products in one event', async (t) => {
    const { buyer, product } = await world(app);
    const p = await product();
    const q = await product();
    const seen: Array<{ productIds: number[]; scope?: string }> = [];
    const off = app.bundle.services.events.on('productsChanged', ({ productIds, scope }) => {
      // Other tests' orders may share the batch: only these two products are looked at.
      const ours = productIds.filter((id) => id === p || id === q);
      if (ours.length > 0) seen.push({ productIds: ours, scope });
    });
    try {
      const placed = await placeOrder(app, buyer.token, [
        { productId: p, quantity: 1 },
        { productId: q, quantity: 2 },
      ]);
      t.is(placed.status, 201, placed.text);
      // One event for the commit's products (a group commit's batch announces them together), scoped to stock.
      t.is(seen.length, 1);
      t.deepEqual(seen, [{ productIds: [p, q].sort((a, b) => a - b), scope: 'stock' }]);
      seen.length = 0;
      const cancelled = await app.request('POST', `/api/v1/orders/${placed.body.orders[0].id}/cancel`, {
        token: buyer.token,
      });
      t.is(cancelled.status, 200, cancelled.text);
      t.deepEqual(seen, [{ productIds: [p, q].sort((a, b) => a - b), scope: 'stock' }]);
    } finally {
      off();
    }
  });
}
