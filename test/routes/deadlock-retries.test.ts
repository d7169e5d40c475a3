// Refresh-token rotation, a password change and a product's creation retry when InnoDB picks their transaction
// as a deadlock victim: each is driven into a real deadlock with a rival transaction (test/helpers/deadlocks.ts)
// and the HTTP call must answer as usual, not 503. SQLite has one writer and no deadlocks.
// A profile edit without a password change is one UPDATE of one member row: it holds no lock while it waits
// for one, so it can never be part of a cycle; only the password change's transaction can. The last test puts
// it against the rival that deadlocks a password change. An image upload avoids the cycle instead: it locks the
// product before the seller, as an order batch does.
import test from 'ava';
import { openRival } from '../helpers/deadlocks';
import { createCategory, createMember, createProduct, login } from '../helpers/factories';
import { imageBytes, upload } from './images-fixtures';
import { DB_KIND, startTestApp, type TestApp } from '../helpers/harness';
import { watchQueries } from '../helpers/queries';

const mysqlOnly = DB_KIND === 'mysql' ? test.serial : test.skip;

let app: TestApp;
test.before(async () => {
  if (DB_KIND === 'mysql') app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

mysqlOnly(
  'POST /auth/refresh: a rotation chosen as deadlock victim is run again and answers 200',
  async (t) => {
    const member = await createMember(app);
    const { refreshToken } = await login(app, member);
    const { id: tokenId, family_id: family } = await app
      .db('refresh_tokens')
      .where('member_id', member.id)
      .first();
    const marks = watchQueries(app.db, (q) => /^update `refresh_tokens` set `used_at`/i.test(q.sql));
    const rival = await openRival(app.config.database);
    try {
      // The rival holds the gap after the newest token: the rotation marks its token used (and holds that
      // row), then waits to insert the family's next token; the rival asks for the marked row.
      await rival.trx.raw('SELECT id FROM refresh_tokens WHERE id >= ? LOCK IN SHARE MODE', [tokenId + 1]);
      const rotation = app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken } });
      await rival.blocks(rotation);
      const [rows] = await rival.trx.raw('SELECT used_at FROM refresh_tokens WHERE id = ? FOR UPDATE', [
        tokenId,
      ]);
      t.is(rows[0].used_at, null, "the victim's mark was rolled back");
      await rival.trx.rollback();

      const res = await rotation;
      t.is(res.status, 200, res.text);
      t.is(marks.count(), 2, 'the rotation ran twice');
      const familyRows = await app.db('refresh_tokens').where('family_id', family).orderBy('id');
      t.is(familyRows.length, 2, 'one next token, from the retry');
      t.not(familyRows[0].used_at, null);
      t.is(
        (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: res.body.refreshToken } }))
          .status,
        200,
      );
    } finally {
      marks.stop();
      await rival.end();
    }
  },
);

mysqlOnly(
  'PATCH /members/me (password change) chosen as deadlock victim is run again and answers 200',
  async (t) => {
    const member = await createMember(app);
    const { refreshToken } = await login(app, member);
    const revokes = watchQueries(app.db, (q) => /^update `refresh_tokens` set `revoked_at`/i.test(q.sql));
    const rival = await openRival(app.config.database);
    try {
      // The rival holds the member's refresh tokens: the change updates the member row (and holds it), then
      // waits to revoke those tokens; the rival asks for the member row.
      await rival.trx.raw('SELECT id FROM refresh_tokens WHERE member_id = ? FOR UPDATE', [member.id]);
      const change = app.request('PATCH', '/api/v1/members/me', {
        token: member.token,
        body: { name: 'Renamed', password: 'New-password-456', currentPassword: member.password },
      });
      await rival.blocks(change);
      const [rows] = await rival.trx.raw('SELECT name, token_version FROM members WHERE id = ? FOR UPDATE', [
        member.id,
      ]);
      t.like(rows[0], { name: 'Test BUYER', token_version: 0 }, "the victim's update was rolled back");
      await rival.trx.rollback();

      const res = await change;
      t.is(res.status, 200, res.text);
      t.is(res.body.name, 'Renamed');
      t.is(revokes.count(), 2, 'the change ran twice');
      const row = await app.db('members').where('id', member.id).first();
      t.is(row.token_version, 1, 'bumped once: the rolled-back run left nothing');
      t.is((await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken } })).status, 401);
      await login(app, { email: member.email, password: 'New-password-456' });
    } finally {
      revokes.stop();
      await rival.end();
    }
  },
);

mysqlOnly(
  "PATCH /members/me without a password change is no part of the password change's deadlock: it runs once, at once",
  async (t) => {
    const member = await createMember(app);
    const { refreshToken } = await login(app, member);
    const memberUpdates = watchQueries(app.db, (q) => /^update `members`/i.test(q.sql));
    const rival = await openRival(app.config.database);
    try {
      // The rival of the test above: it holds the member's refresh tokens, then asks for the member row.
      await rival.trx.raw('SELECT id FROM refresh_tokens WHERE member_id = ? FOR UPDATE', [member.id]);
      // The edit takes the member row and commits without touching the tokens: it is answered while the rival
      // still holds them, and the rival then gets the row.
      const res = await app.request('PATCH', '/api/v1/members/me', {
        token: member.token,
        body: { name: 'Renamed', phone: '010-1111-2222' },
      });
      t.is(res.status, 200, res.text);
      t.like(res.body, { name: 'Renamed', phone: '010-1111-2222' });
      const [rows] = await rival.trx.raw('SELECT name, token_version FROM members WHERE id = ? FOR UPDATE', [
        member.id,
      ]);
      t.like(rows[0], { name: 'Renamed', token_version: 0 }, 'committed, sessions untouched');
      await rival.trx.rollback();
      t.is(memberUpdates.count(), 1, 'run once: never a deadlock victim, never retried');
      t.is((await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken } })).status, 200);
    } finally {
      memberUpdates.stop();
      await rival.end();
    }
  },
);

mysqlOnly('POST /products chosen as deadlock victim is run again and answers 201', async (t) => {
  // As an order batch of the seller's products does: it holds product rows and gaps, then reads the seller's
  // row for its foreign key, while the creation holds the seller's row (the quota) and waits to insert.
  const seller = await createMember(app, 'SELLER');
  const categoryId = await createCategory(app);
  const inserts = watchQueries(app.db, (q) => /^insert into `products`/i.test(q.sql));
  const rival = await openRival(app.config.database);
  try {
    const [[{ top }]] = await rival.trx.raw('SELECT COALESCE(MAX(id), 0) AS top FROM products');
    await rival.trx.raw('SELECT id FROM products WHERE id > ? FOR UPDATE', [top]); // the gap a new row goes in
    const create = app.request('POST', '/api/v1/products', {
      token: seller.token,
      body: { categoryId, name: 'Deadlocked lamp', price: 12.5, stockQuantity: 3 },
    });
    await rival.blocks(create);
    await rival.trx.raw('SELECT id FROM members WHERE id = ? FOR UPDATE', [seller.id]);
    t.is(Number((await rival.trx('products').where('seller_id', seller.id).count({ n: '*' }))[0].n), 0);
    await rival.trx.rollback();

    const res = await create;
    t.is(res.status, 201, res.text);
    t.like(res.body, { name: 'Deadlocked lamp', price: 12.5, stockQuantity: 3, sellerId: seller.id });
    t.is(inserts.count(), 2, 'the creation ran twice');
    t.is(Number((await app.db('products').where('seller_id', seller.id).count({ n: '*' }))[0].n), 1);
  } finally {
    inserts.stop();
    await rival.end();
  }
});

mysqlOnly(
  "an image upload takes the product's lock before the seller's, as an order batch does: no deadlock",
  async (t) => {
    // The rival does what an order batch of the product does: it holds the product's row, then reads the seller's
    // row (the foreign key of its order items). The upload waits for the product and holds nothing meanwhile.
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id);
    const rival = await openRival(app.config.database);
    try {
      await rival.trx.raw('SELECT id FROM products WHERE id = ? FOR UPDATE', [productId]);
      const uploading = upload(app, productId, seller.token, [{ name: 'a.png', data: imageBytes('png') }]);
      await rival.blocks(uploading);
      await rival.trx.raw('SELECT id FROM members WHERE id = ? LOCK IN SHARE MODE', [seller.id]);
      await rival.trx.rollback();
      const res = await uploading;
      t.is(res.status, 201, res.text);
      t.is(res.body.images.length, 1);
      t.is(Number((await app.db('product_images').where('product_id', productId).count({ n: '*' }))[0].n), 1);
    } finally {
      await rival.end();
    }
  },
);
