// The group commit's totals, pure: one change per product in id order, carrying the catalog version the
// product was judged on; a batch whose requests judged one product on two versions is refused instead.
import test from 'ava';
import { judgedTotals } from '../../actors/stock-rules';

test('judged lines sum per product, in id order, with the version they were judged on', (t) => {
  t.deepEqual(
    judgedTotals([
      { productId: 9, quantity: 2, catalogVersion: 4 },
      { productId: 3, quantity: 1, catalogVersion: 1 },
      { productId: 9, quantity: 5, catalogVersion: 4 },
    ]),
    {
      ok: true,
      changes: [
        { productId: 3, quantity: 1, catalogVersion: 1 },
        { productId: 9, quantity: 7, catalogVersion: 4 },
      ],
    },
  );
  t.deepEqual(judgedTotals([]), { ok: true, changes: [] });
});

test('one product judged on two catalog versions in a batch: the batch is refused, naming the products', (t) => {
  t.deepEqual(
    judgedTotals([
      { productId: 7, quantity: 1, catalogVersion: 2 },
      { productId: 3, quantity: 1, catalogVersion: 1 },
      { productId: 5, quantity: 1, catalogVersion: 1 },
      { productId: 7, quantity: 1, catalogVersion: 3 },
      { productId: 3, quantity: 2, catalogVersion: 2 },
    ]),
    { ok: false, productIds: [3, 7] },
  );
});
