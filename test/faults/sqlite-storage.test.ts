// The embedded SQLite database when it cannot store or is busy: a file that cannot grow (a full disk) answers every
// write 503 SERVICE_UNAVAILABLE with Retry-After, never a 500, and leaves nothing half-written; writes succeed again
// once there is room. A request waiting behind the one connection gives up after DB_ACQUIRE_TIMEOUT_MS, as on
// MariaDB, with the same 503. (MariaDB's own "cannot store" errors are classified in test/lib/db-errors.test.ts.)
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { createMember, createProduct, uniq, type TestMember } from '../helpers/factories';

const ADDRESS = {
  zipCode: '06236',
  address: '123 Teheran-ro',
  addressDetail: 'Suite 4',
  receiverName: 'Kim Buyer',
  receiverPhone: '010-1234-5678',
};

if (DB_KIND !== 'sqlite') {
  test.skip('SQLite only (MariaDB: test/lib/db-errors.test.ts)', () => {});
} else {
  let app: TestApp;
  let seller: TestMember;
  let buyer: TestMember;
  test.before(async () => {
    app = await startTestApp({ env: { DB_ACQUIRE_TIMEOUT_MS: '1000' } });
    [seller, buyer] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'BUYER')]);
  });
  test.after.always(async () => {
    await app?.close();
  });

  const signup = () =>
    app.request('POST', '/api/v1/auth/signup', {
      body: {
        email: `full-${uniq()}@x.test`,
        password: 'Passw0rd!!',
        name: 'n'.repeat(50),
        phone: '010-1111-2222',
        role: 'BUYER',
      },
    });

  test.serial(
    'a file that cannot grow: writes answer 503 with Retry-After, nothing half-written, then succeed again',
    async (t) => {
      const productId = await createProduct(app, seller.id, { stockQuantity: 100_000, price: '3.00' });
      const order = () =>
        app.request('POST', '/api/v1/orders', {
          token: buyer.token,
          body: { orderItems: [{ productId, quantity: 2 }], shippingAddress: ADDRESS },
        });
      const [{ page_count: pages }] = (await app.db.raw('PRAGMA page_count')) as Array<{
        page_count: number;
      }>;
      await app.db.raw(`PRAGMA max_page_count = ${pages}`);
      let placed = 0;
      try {
        // The free room left in each table's last pages fills first.
        let res = await signup();
        for (let i = 0; res.status === 201 && i < 2_000; i++) res = await signup();
        assertError(t, res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/auth/signup');
        t.is(res.headers.get('retry-after'), '5');
        res = await order();
        for (; res.status === 201 && placed < 2_000; res = await order()) placed++;
        assertError(t, res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/orders');
        t.is(res.headers.get('retry-after'), '5');
        // Nothing half-written: the stock taken is the stock of the orders that exist, one per 201.
        const product = await app.db('products').where('id', productId).first();
        t.is(product.stock_quantity, 100_000 - 2 * placed);
        const [{ n }] = await app.db('orders').where('buyer_id', buyer.id).count({ n: '*' });
        t.is(Number(n), placed);
      } finally {
        await app.db.raw('PRAGMA max_page_count = 1073741823');
      }
      t.is((await signup()).status, 201);
      const res = await order();
      t.is(res.status, 201, res.text);
      t.is(
        (await app.request('GET', `/api/v1/products/${productId}`)).body.stockQuantity,
        100_000 - 2 * (placed + 1),
      );
    },
  );

  test.serial(
    'a request waiting for the busy connection answers 503 after DB_ACQUIRE_TIMEOUT_MS, not when it frees',
    async (t) => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const holding = app.db.transaction(async (trx) => {
        await trx.raw('select 1');
        entered();
        await held;
      });
      await inside;
      const freeAt = setTimeout(release, 8_000);
      try {
        const started = Date.now();
        const res = await app.request('GET', '/api/v1/notifications', { token: seller.token });
        const waited = Date.now() - started;
        assertError(t, res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/notifications');
        t.is(res.headers.get('retry-after'), '5');
        // 1 s to acquire (twice at most on the request's path), far from the 8 s the connection stays busy.
        t.true(waited < 5_000, `answered after ${waited} ms`);
      } finally {
        clearTimeout(freeAt);
        release();
        await holding;
      }
      t.is((await app.request('GET', '/api/v1/notifications', { token: seller.token })).status, 200);
    },
  );
}
