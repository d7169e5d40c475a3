// A transition's answer is the order as that transition left it (API.md: concurrent transitions are
// linearizable): a seller's confirm answers CONFIRMED even when the buyer's cancel lands right after its COMMIT.
// MariaDB, through the tests' TCP proxy, which holds back the read of the order that builds the answer: read
// after the COMMIT, the cancel that landed meanwhile showed in the confirm's answer (200 with CANCELLED).
import test from 'ava';
import { startBehindProxy, type ProxiedService } from '../faults/fault-fixtures';
import { DB_KIND } from '../helpers/harness';
import { placeOrder } from './order-fixtures';

let service: ProxiedService | undefined;
test.before(async () => {
  if (DB_KIND !== 'mysql') return;
  service = await startBehindProxy({ world: { buyers: 1, products: 1, stock: 5 } });
});
test.after.always(async () => {
  await service?.close();
});

/** The statement that loads an order with its items for an answer (Objection's graph fetch). */
const ORDER_LOAD = 'select `orders`.* from `orders` where `id` in';

test.serial(
  "a seller's confirm answers CONFIRMED when the buyer's cancel lands right after it",
  async (t) => {
    if (!service) return t.pass('the proxy sits in front of MariaDB');
    const { app, proxy, world } = service;
    const [buyer] = world.buyers;
    const [p] = world.initial.keys();
    const seller = world.sellers[0]; // the first product is the first seller's
    const placed = await placeOrder(app, buyer.token, [{ productId: p, quantity: 1 }]);
    t.is(placed.status, 201);
    const orderId = placed.body.orders[0].id;

    let caught!: () => void;
    const held = new Promise<void>((resolve) => (caught = resolve));
    const late = proxy.delayOn(ORDER_LOAD, { delayMs: 800, onHold: caught });
    const confirm = app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, {
      token: seller.token,
      body: { status: 'CONFIRMED' },
    });
    await held; // the confirm's answer is being read
    const cancel = await app.request('POST', `/api/v1/orders/${orderId}/cancel`, { token: buyer.token });
    const confirmed = await confirm;
    await late;

    t.is(confirmed.status, 200, confirmed.text);
    t.is(confirmed.body.status, 'CONFIRMED');
    t.deepEqual(
      confirmed.body.statusHistory.map((entry: { to: string }) => entry.to),
      ['PENDING', 'CONFIRMED'],
    );
    // The cancel came after the confirm: CONFIRMED orders are cancellable by their buyer.
    t.is(cancel.status, 200, cancel.text);
    t.is(cancel.body.status, 'CANCELLED');
    t.deepEqual(
      cancel.body.statusHistory.map((entry: { to: string }) => entry.to),
      ['PENDING', 'CONFIRMED', 'CANCELLED'],
    );
  },
);
