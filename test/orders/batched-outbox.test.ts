// Orders committed together in one group-commit transaction share one multi-row outbox INSERT, yet each
// event keeps the id of the request that placed it, and its delivery is logged under that id.
import test from 'ava';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import type { QueryEvent } from '../helpers/queries';
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
  const inserts: string[] = [];
  const watch = (query: QueryEvent) => {
    if (/insert into [`"](orders|order_items|order_status_history|notification_outbox)[`"]/i.test(query.sql))
      inserts.push(query.sql);
  };
  app.db.on('query', watch);
  const responses = await Promise.all(
    ids.map((requestId) =>
      placeOrder(app, buyer.token, [{ productId, quantity: 1 }], { 'X-Request-Id': requestId }),
    ),
  ).finally(() => app.db.removeListener('query', watch));
  // A batch's four INSERTs: one packet on MariaDB (the ids taken in SQL), one statement each on SQLite.
  const tables = ['orders', 'order_items', 'order_status_history', 'notification_outbox'];
  const named = (sql: string) =>
    tables.filter(
      (table) => sql.includes(`insert into \`${table}\``) || sql.includes(`insert into "${table}"`),
    );
  if (DB_KIND === 'mysql') for (const sql of inserts) t.deepEqual(named(sql), tables);
  else for (const sql of inserts) t.is(named(sql).length, 1);
  t.true(inserts.length > 0);
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
    // The payload's text is what JSON.stringify makes of an OrderCreatedPayload (built around the id in SQL).
    const order = responses.find((res) => res.body.orders[0].id === orderId)!.body.orders[0];
    t.is(
      row?.payload,
      JSON.stringify({ sellerId: order.items[0].sellerId, orderId, orderNumber: order.orderNumber }),
    );
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
