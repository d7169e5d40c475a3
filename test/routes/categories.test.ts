import knexFactory from 'knex';
import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError } from '../helpers/assertions';
import { createMember, uniq, type TestMember } from '../helpers/factories';

let app: TestApp;
let admin: TestMember;
let seller: TestMember;
test.before(async () => {
  app = await startTestApp();
  admin = await createMember(app, 'ADMIN');
  seller = await createMember(app, 'SELLER');
});
test.after.always(async () => {
  await app?.close();
});

const create = (body: unknown, token = admin.token) =>
  app.request('POST', '/api/v1/admin/categories', { body, token });

test.serial(
  'GET /categories lists all by displayOrder then id, and a create shows up at once (cache dropped)',
  async (t) => {
    const first = await app.request('GET', '/api/v1/categories');
    t.is(first.status, 200);
    t.true(Array.isArray(first.body));

    const late = await create({ name: `Late ${uniq()}`, displayOrder: 50 });
    const early = await create({ name: `Early ${uniq()}`, displayOrder: -5 });
    const child = await create({ name: `Child ${uniq()}`, parentId: early.body.id });
    t.is(late.status, 201);
    t.deepEqual(Object.keys(late.body).sort(), ['displayOrder', 'id', 'name', 'parentId']);
    t.is(late.body.parentId, null);
    t.is(child.body.parentId, early.body.id);
    t.is(child.body.displayOrder, 0);

    const after = await app.request('GET', '/api/v1/categories');
    t.is(after.status, 200);
    const ids = after.body.map((c: { id: number }) => c.id);
    for (const c of [late.body, early.body, child.body])
      t.deepEqual(
        after.body.find((x: { id: number }) => x.id === c.id),
        c,
      );
    const sorted = [...after.body]
      .sort((a, b) => a.displayOrder - b.displayOrder || a.id - b.id)
      .map((c) => c.id);
    t.deepEqual(ids, sorted);
    t.is(after.body.length, first.body.length + 3);
  },
);

test.serial('GET /categories: categories of one displayOrder come by id, oldest first', async (t) => {
  const made = [];
  for (const name of ['Zeta', 'Alpha', 'Mid']) {
    const res = await create({ name: `${name} ${uniq()}`, displayOrder: 4242 });
    t.is(res.status, 201);
    made.push(res.body.id as number);
  }
  const listed = await app.request('GET', '/api/v1/categories');
  const tied = listed.body
    .filter((c: { displayOrder: number }) => c.displayOrder === 4242)
    .map((c: { id: number }) => c.id);
  t.deepEqual(
    tied,
    [...made].sort((a, b) => a - b),
  );
});

test.serial(
  'GET /categories: ETag + Cache-Control public, no-cache (always revalidated), 304 on If-None-Match, new ETag after a create',
  async (t) => {
    const res = await app.request('GET', '/api/v1/categories');
    t.is(res.status, 200);
    t.true(Array.isArray(res.body));
    const etag = res.headers.get('etag');
    t.regex(etag ?? '', /^"[A-Za-z0-9_-]+"$/);
    t.is(res.headers.get('cache-control'), 'public, no-cache');
    const again = await app.request('GET', '/api/v1/categories', { headers: { 'If-None-Match': etag! } });
    t.is(again.status, 304);
    t.is(again.text, '');
    t.is(again.headers.get('etag'), etag);
    t.is(again.headers.get('cache-control'), 'public, no-cache');
    const weak = await app.request('GET', '/api/v1/categories', {
      headers: { 'If-None-Match': `"other", W/${etag}` },
    });
    t.is(weak.status, 304);
    await create({ name: `New ${uniq()}` });
    const changed = await app.request('GET', '/api/v1/categories', { headers: { 'If-None-Match': etag! } });
    t.is(changed.status, 200);
    t.not(changed.headers.get('etag'), etag);
  },
);

test('duplicate name under the same parent (case-insensitive, trimmed) is 409 DUPLICATE_CATEGORY; other parent is fine', async (t) => {
  const name = `Shoes ${uniq()}`;
  const root = await create({ name });
  t.is(root.status, 201);
  t.is(root.body.name, name);
  assertError(t, await create({ name: `  ${name.toUpperCase()} ` }), 409, 'DUPLICATE_CATEGORY');
  const under = await create({ name, parentId: root.body.id });
  t.is(under.status, 201);
  assertError(
    t,
    await create({ name: name.toLowerCase(), parentId: root.body.id }),
    409,
    'DUPLICATE_CATEGORY',
  );
});

test('names differ by accents, emoji and 1-to-2 lowercase expansions: only case and outer spaces make duplicates', async (t) => {
  // A fresh parent keeps these fixed names apart from the other tests of the file.
  const parent = await create({ name: `Names ${uniq()}` });
  const under = (name: string) => create({ name, parentId: parent.body.id });
  for (const [first, second] of [
    ['Cafe', 'Café'],
    ['a😀', 'a😁'],
  ]) {
    const a = await under(first);
    t.is(a.status, 201, JSON.stringify(a.body));
    t.like(a.body, { name: first, parentId: parent.body.id });
    const b = await under(second);
    t.is(b.status, 201, `${second} after ${first}: ${JSON.stringify(b.body)}`);
    t.like(b.body, { name: second, parentId: parent.body.id });
  }
  // "İ" lowercases to "i" + U+0307: the 100-character name has a 200-character key.
  const dotted = await under('İ'.repeat(100));
  t.is(dotted.status, 201, JSON.stringify(dotted.body));
  t.is(dotted.body.name, 'İ'.repeat(100));
  t.is((await under('Shoes')).status, 201);
  const dup = await under(' shoes ');
  assertError(t, dup, 409, 'DUPLICATE_CATEGORY');
  t.regex(dup.body.message, /shoes/);
  const listed = (await app.request('GET', '/api/v1/categories')).body
    .filter((c: { parentId: number | null }) => c.parentId === parent.body.id)
    .map((c: { name: string }) => c.name)
    .sort();
  t.deepEqual(listed, ['Cafe', 'Café', 'Shoes', 'a😀', 'a😁', 'İ'.repeat(100)].sort());
});

test('one name in two Unicode spellings (NFC and NFD) is one category: 409 DUPLICATE_CATEGORY either way round', async (t) => {
  const composed = `Café ${uniq()}`.normalize('NFC');
  const decomposed = composed.normalize('NFD');
  t.not(composed, decomposed);
  const first = await create({ name: composed });
  t.is(first.status, 201);
  t.is(first.body.name, composed);
  const dup = await create({ name: decomposed.toUpperCase() });
  assertError(t, dup, 409, 'DUPLICATE_CATEGORY');
  // Sent first in the decomposed spelling (stored in NFC), the composed one is the duplicate.
  const parent = first.body.id;
  const nfd = await create({ name: decomposed, parentId: parent });
  t.is(nfd.status, 201);
  t.is(nfd.body.name, composed);
  assertError(t, await create({ name: composed, parentId: parent }), 409, 'DUPLICATE_CATEGORY');
  // An accent is still a difference.
  t.is((await create({ name: composed.replace('é', 'e'), parentId: parent })).status, 201);
});

test('concurrent creates of one name: exactly one 201, the rest 409', async (t) => {
  const name = `Race ${uniq()}`;
  const results = await Promise.all(Array.from({ length: 8 }, () => create({ name })));
  t.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  t.true(results.filter((r) => r.status === 409).every((r) => r.body.code === 'DUPLICATE_CATEGORY'));
});

test('unknown parent is 400 naming parentId', async (t) => {
  const res = await create({ name: `Orphan ${uniq()}`, parentId: 999_999 });
  assertError(t, res, 400, 'VALIDATION_ERROR');
  t.deepEqual(res.body.errors, [{ field: 'parentId', message: 'parent category does not exist' }]);
});

test('validation: blank, missing, non-string or too long name, unknown fields, bad displayOrder', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ name: '   ' }, 'name'],
    [{}, 'name'],
    [{ name: 42 }, 'name'],
    [{ name: 'x'.repeat(101) }, 'name'],
    [{ name: 'ok', extra: 1 }, 'extra'],
    [{ name: 'ok', displayOrder: 1.5 }, 'displayOrder'],
    [{ name: 'ok', displayOrder: '3' }, 'displayOrder'],
    [{ name: 'ok', parentId: 'abc' }, 'parentId'],
  ];
  for (const [body, field] of cases) {
    const res = await create(body);
    assertError(t, res, 400, 'VALIDATION_ERROR');
    t.true(
      res.body.errors.some((e: { field: string }) => e.field === field),
      `${JSON.stringify(body)} -> ${JSON.stringify(res.body.errors)}`,
    );
  }
});

test('POST /admin/categories: 401 without a token, 403 for a seller', async (t) => {
  assertError(
    t,
    await app.request('POST', '/api/v1/admin/categories', { body: { name: 'x' } }),
    401,
    'UNAUTHENTICATED',
  );
  assertError(t, await create({ name: `Nope ${uniq()}` }, seller.token), 403, 'FORBIDDEN');
});

test('a create that fails for an unknown reason (it may have committed) drops the cached list all the same', async (t) => {
  // The create's INSERT waits for a lock another connection holds until its statement timeout: a 503 whose
  // outcome the service cannot know (a lost answer looks the same). What such a create may have committed
  // (here written directly afterwards) must show at once, not after the list's 3600 s.
  const slow = await startTestApp({ env: { DB_STATEMENT_TIMEOUT_MS: '300' } });
  t.teardown(() => slow.close());
  const boss = await createMember(slow, 'ADMIN');
  t.is((await slow.request('GET', '/api/v1/categories')).status, 200); // the list is cached now
  const name = `Held ${uniq()}`;
  const hold = await holdCategoryWrites(slow, name);
  try {
    const res = await slow.request('POST', '/api/v1/admin/categories', { body: { name }, token: boss.token });
    assertError(t, res, 503, 'SERVICE_UNAVAILABLE', '/api/v1/admin/categories');
  } finally {
    await hold.release();
  }
  await slow.db('categories').insert({
    name,
    name_key: name.toLowerCase(),
    parent_key: 0,
    display_order: 0,
    created_at: new Date(),
  });
  const after = await slow.request('GET', '/api/v1/categories');
  t.is(after.status, 200);
  t.true(
    after.body.some((category: { name: string }) => category.name === name),
    'the category the failed create may have written is listed',
  );
});

/**
 * Another connection holds what an insert of `name` needs: SQLite's write lock (BEGIN IMMEDIATE), or on MySQL an
 * uncommitted row with the same key, so the service's INSERT waits on the unique index.
 */
async function holdCategoryWrites(target: TestApp, name: string): Promise<{ release(): Promise<void> }> {
  if (target.config.database.client === 'sqlite') {
    const holder = knexFactory({
      client: 'better-sqlite3',
      connection: { filename: target.config.database.filename },
      useNullAsDefault: true,
    });
    await holder.raw('BEGIN IMMEDIATE');
    return {
      release: async () => {
        await holder.raw('ROLLBACK');
        await holder.destroy();
      },
    };
  }
  const holder = await target.db.transaction();
  await holder('categories').insert({
    name,
    name_key: name.toLowerCase(),
    parent_key: 0,
    display_order: 0,
    created_at: new Date(),
  });
  return {
    release: async () => {
      await holder.rollback();
    },
  };
}
