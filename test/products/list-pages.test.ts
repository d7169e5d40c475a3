// The public list pages are dropped as narrowly as a change allows (lib/products/list-pages.ts): a stock change
// drops the pages showing the product and the pages that follow stock, an image change only the pages showing
// the product, anything else every page; and a page whose load overlapped a change it may show is never stored.
import test from 'ava';
import { createListPages, MAX_TRACKED, type LoadedListPage } from '../../lib/products/list-pages';

function pages() {
  const loads: string[] = [];
  const listPages = createListPages({ ttlSeconds: 60, maxEntries: 100 });
  /** Gets `key` (a page showing `productIds`), counting the loads. */
  const get = (key: string, productIds: number[], followsStock = false) =>
    listPages.get(key, followsStock, async () => {
      loads.push(key);
      return { body: { key, productIds }, productIds };
    });
  return { listPages, loads, get };
}

test('a stock change drops the pages showing the product and those following stock, nothing else', async (t) => {
  const { listPages, loads, get } = pages();
  await get('shows 1', [1, 2]);
  await get('shows 3', [3]);
  await get('status filter', [3], true);
  await get('images only', [4]);
  t.deepEqual(loads.splice(0), ['shows 1', 'shows 3', 'status filter', 'images only']);

  listPages.changed([1], 'stock');
  for (const [key, ids, follows] of [
    ['shows 1', [1, 2], false],
    ['shows 3', [3], false],
    ['status filter', [3], true],
    ['images only', [4], false],
  ] as const)
    await get(key, [...ids], follows);
  t.deepEqual(loads.splice(0), ['shows 1', 'status filter']);

  listPages.changed([4], 'images');
  await get('status filter', [3], true);
  await get('images only', [4]);
  t.deepEqual(loads.splice(0), ['images only'], 'an image change does not touch the pages following stock');

  listPages.changed([99], undefined);
  await get('shows 3', [3]);
  t.deepEqual(loads.splice(0), ['shows 3'], 'a change of unknown scope drops every page');
});

test('several products changed in one call: each drops its pages, as one call per product would', async (t) => {
  const { listPages, loads, get } = pages();
  await get('shows 1', [1]);
  await get('shows 2', [2]);
  await get('shows 3', [3]);
  await get('status filter', [4], true);
  t.deepEqual(loads.splice(0), ['shows 1', 'shows 2', 'shows 3', 'status filter']);

  listPages.changed([1, 3], 'stock');
  await get('shows 1', [1]);
  await get('shows 2', [2]);
  await get('shows 3', [3]);
  await get('status filter', [4], true);
  t.deepEqual(loads.splice(0), ['shows 1', 'shows 3', 'status filter']);

  listPages.changed([2, 4], 'images');
  await get('shows 1', [1]);
  await get('shows 2', [2]);
  await get('status filter', [4], true);
  t.deepEqual(
    loads.splice(0),
    ['shows 2', 'status filter'],
    'an image change drops only the pages showing them',
  );

  listPages.changed([], undefined);
  await get('shows 1', [1]);
  t.deepEqual(loads.splice(0), [], 'no product, nothing dropped');
});

test('a stored page stops being current (the memo stops replaying it) once dropped', async (t) => {
  const { listPages, get } = pages();
  const document = await get('shows 1', [1]);
  t.true(document.current!());
  listPages.changed([2], 'stock');
  t.true(document.current!(), 'another product’s stock change leaves it');
  listPages.changed([1], 'stock');
  t.false(document.current!());
});

test('a page loaded while a product it shows changed answers its callers but is not stored', async (t) => {
  const listPages = createListPages({ ttlSeconds: 60, maxEntries: 100 });
  let loads = 0;
  const slowLoad = (productIds: number[]) => {
    let finish!: () => void;
    const load = () => {
      loads++;
      return new Promise<LoadedListPage>((resolve) => {
        finish = () => resolve({ body: { loads }, productIds });
      });
    };
    return { load, finish: () => finish() };
  };

  // Product 1 changes during the load of a page showing it: not kept.
  const first = slowLoad([1, 2]);
  const pending = listPages.get('page', false, first.load);
  await Promise.resolve();
  listPages.changed([1], 'stock');
  first.finish();
  t.is(JSON.parse((await pending).json).loads, 1);
  const again = slowLoad([1, 2]);
  const reloaded = listPages.get('page', false, again.load);
  again.finish();
  await reloaded;
  t.is(loads, 2, 'the overlapped page was loaded again');

  // Another product's change during the load: kept.
  await listPages.get('other', false, async () => ({ body: {}, productIds: [7] }));
  const third = slowLoad([5]);
  const kept = listPages.get('kept', false, third.load);
  await Promise.resolve();
  listPages.changed([6], 'stock');
  third.finish();
  await kept;
  const before = loads;
  await listPages.get('kept', false, third.load);
  t.is(loads, before, 'served from the cache');

  // A page following stock overlapped by any stock change: not kept.
  const fourth = slowLoad([5]);
  const follows = listPages.get('follows', true, fourth.load);
  await Promise.resolve();
  listPages.changed([8], 'stock');
  fourth.finish();
  await follows;
  const fifth = slowLoad([5]);
  const reread = listPages.get('follows', true, fifth.load);
  fifth.finish();
  await reread;
  t.is(loads, before + 2);
});

test('a request that comes after a change does not join a load in flight since before it: it loads afresh', async (t) => {
  const listPages = createListPages({ ttlSeconds: 60, maxEntries: 100 });
  const finishers: Array<() => void> = [];
  let loads = 0;
  const load = () => {
    const n = ++loads;
    return new Promise<LoadedListPage>((resolve) => {
      finishers.push(() => resolve({ body: { load: n }, productIds: [1] }));
    });
  };
  const body = async (page: Promise<{ json: string }>) => JSON.parse((await page).json).load;

  const first = listPages.get('page', false, load);
  const joined = listPages.get('page', false, load); // before any change: one load for both
  await Promise.resolve();
  t.is(loads, 1);
  listPages.changed([1], 'stock'); // an order for product 1 committed and was answered
  const after = listPages.get('page', false, load); // that buyer's read
  await Promise.resolve();
  t.is(loads, 2, 'the read after the change started its own load');
  for (const finish of finishers) finish();
  t.is(await body(first), 1);
  t.is(await body(joined), 1);
  t.is(await body(after), 2);
  // The fresh load was stored: the next read is served from the cache.
  t.is(await body(listPages.get('page', false, load)), 2);
  t.is(loads, 2);
});

test('a load dropped by a flush does not unmark its successor: a request after the next change loads afresh', async (t) => {
  const listPages = createListPages({ ttlSeconds: 60, maxEntries: 100 });
  const finishers = new Map<string, () => void>();
  const calls: string[] = [];
  const load = (name: string, productIds: number[]) => () => {
    calls.push(name);
    return new Promise<LoadedListPage>((resolve) => {
      finishers.set(name, () => resolve({ body: { load: name }, productIds }));
    });
  };
  const body = async (page: Promise<{ json: string }>) => JSON.parse((await page).json).load;

  // A read the page before a change of unknown kind (product 1 joined the page): it shows product 2 only.
  const a = listPages.get('page', false, load('A', [2]));
  await Promise.resolve();
  listPages.flush(); // that change (or missed change events): no tick of the change clock
  const b = listPages.get('page', false, load('B', [1, 2])); // starts at the same clock as A
  await Promise.resolve();
  finishers.get('A')!();
  t.is(await body(a), 'A');
  listPages.changed([1], 'stock'); // an order for product 1 committed and was answered
  const c = listPages.get('page', false, load('C', [1, 2])); // that buyer's read
  await Promise.resolve();
  t.deepEqual(calls, ['A', 'B', 'C'], 'the read after the change did not join B, in flight since before it');
  finishers.get('B')!();
  finishers.get('C')?.();
  t.is(await body(b), 'B');
  t.is(await body(c), 'C');
});

test('the index is bounded: past MAX_TRACKED (product, page) pairs a narrow change drops every page', async (t) => {
  const { listPages, loads, get } = pages();
  await get('kept', [1]);
  const idsPerPage = 50;
  const pagesNeeded = Math.ceil(MAX_TRACKED / idsPerPage);
  for (let page = 0; page < pagesNeeded; page++) {
    const first = 10 + page * idsPerPage;
    await get(
      `p${page}`,
      Array.from({ length: idsPerPage }, (_, i) => first + i),
    );
  }
  loads.length = 0;
  await get('kept', [1]);
  t.deepEqual(loads, [], 'held before');
  listPages.changed([5], 'images'); // a product no page shows
  await get('kept', [1]);
  t.deepEqual(loads, ['kept'], 'every page was dropped, and the index with them');
  listPages.changed([6], 'images');
  await get('kept', [1]);
  t.deepEqual(loads, ['kept'], 'below the bound again: narrow');
});
