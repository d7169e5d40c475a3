// Orders committed together in one group-commit transaction share one multi-row outbox INSERT, yet each
// event keeps the id of the request that placed it, and its delivery is logged under that id.
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { eventually, placeOrder, world } from './order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ logLevel: 'info' });
});
test.after.always(async () => {
  await app?.close();
});

test('parallel orders keep their own request id in the outbox and in the delivery log line', async (t) => {
  const { buyer, product } = await world(app);
  const productId = await product({ stockQuantity: 100 });
  const ids = Array.from({ length: 24 }, (_, i) => `batch-${Date.now()}-${i}`);
  const responses = await Promise.all(
    ids.map((requestId) =>
      placeOrder(app, buyer.token, [{ productId, quantity: 1 }], { 'X-Request-Id': requestId }),
    ),
  );
  const orderIdByRequest = new Map<string, number>();
  responses.forEach((res, i) => {
    t.is(res.status, 201);
    orderIdByRequest.set(ids[i], res.body.orders[0].id);
  });

  const rows = await app
    .db('notification_outbox')
    .where('event_type', 'OrderCreated')
    .select('request_id', 'payload');
  for (const [requestId, orderId] of orderIdByRequest) {
    const row = rows.find((r) => JSON.parse(r.payload).orderId === orderId);
    t.is(row?.request_id, requestId, `order ${orderId}`);
  }

  await eventually(async () => {
    await app.bundle.services.dispatcher.idle();
    const [{ n }] = await app
      .db('notifications')
      .whereIn('outbox_id', app.db('notification_outbox').select('id'))
      .count({ n: '*' });
    return Number(n) >= ids.length;
  });
  for (const [requestId, orderId] of orderIdByRequest) {
    const line = app.logs.lines.find(
      (l) => l.includes('[NotificationDispatcher]') && l.includes(` for order ${orderId} `),
    );
    t.truthy(line, `delivery of order ${orderId} logged`);
    t.true(line!.includes(`[${requestId}]`), line);
  }
});
