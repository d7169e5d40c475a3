// Three real server processes on one database and one cluster: what one instance changes, every instance
// shows within 1 s (product edits, a new category, DRAFT and DELETED products; the same ETags), orders on any
// instance after an edit's 200 are charged the new price and name, the login throttle is one for all of them
// (also across a restart), and each outbox event is delivered once across every process.
import test from 'ava';
import { natsTest, until } from './cluster-fixtures';
import { orderBody, startClusterWorld, type ClusterWorld, type WorldMember } from './instances';

let world: ClusterWorld;
let seller: WorldMember;
let buyer: WorldMember;
let categoryId: number;

natsTest('three instances start on one database and one cluster', async (t) => {
  world = await startClusterWorld('coherence');
  [seller, buyer] = await Promise.all([world.member('SELLER'), world.member('BUYER')]);
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
  },
);

natsTest('each outbox event is delivered once across every process', async (t) => {
  const productIds = await Promise.all(
    Array.from({ length: 4 }, () => world.product(seller.id, categoryId, { stock: 1000 })),
  );
  const responses = await Promise.all(
    Array.from({ length: 24 }, (_, n) =>
      world.request(world.next(), 'POST', '/api/v1/orders', {
        token: buyer.token,
        body: orderBody([{ productId: productIds[n % 4], quantity: 1 }], `outbox-${n}`),
      }),
    ),
  );
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
  await until(
    async () => (await rowsOf()).every((row) => row.delivered_at !== null),
    15_000,
    () => 'every OrderCreated row of these orders delivered',
  );
  const rows = await rowsOf();
  t.true(rows.length >= 24, 'at least one OrderCreated row per order');

  const lines = [
    ...world.output().matchAll(/Delivered OrderCreated for order (\d+) to member (\d+) \(outbox (\d+)\)/g),
  ];
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
