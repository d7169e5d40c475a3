// The product status rule, pure: DRAFT and DELETED never move with stock; a listed product is ON_SALE
// with stock and SOLD_OUT without, whichever of the two it was.
import test from 'ava';
import {
  IN_STOCK_STATUS,
  OUT_OF_STOCK_STATUS,
  PRODUCT_STATUSES,
  STOCK_INDEPENDENT_STATUSES,
  statusFollowingStock,
} from '../../actors/product-status';

test('a listed product is ON_SALE with stock and SOLD_OUT at 0 (a deduction, a restore, a stock PATCH)', (t) => {
  t.is(statusFollowingStock('ON_SALE', 5), 'ON_SALE');
  t.is(statusFollowingStock('ON_SALE', 0), 'SOLD_OUT'); // the last unit sold
  t.is(statusFollowingStock('SOLD_OUT', 1), 'ON_SALE'); // a cancellation or a PATCH brings stock back
  t.is(statusFollowingStock('SOLD_OUT', 0), 'SOLD_OUT');
});

test('DRAFT and DELETED are the seller’s choices: stock never changes them', (t) => {
  for (const stock of [0, 1, 1000]) {
    t.is(statusFollowingStock('DRAFT', stock), 'DRAFT');
    t.is(statusFollowingStock('DELETED', stock), 'DELETED');
  }
});

test('the constants cover every status exactly once (what the SQL form is generated from)', (t) => {
  t.deepEqual([...PRODUCT_STATUSES], ['DRAFT', 'ON_SALE', 'SOLD_OUT', 'DELETED']);
  t.deepEqual(
    [...STOCK_INDEPENDENT_STATUSES, IN_STOCK_STATUS, OUT_OF_STOCK_STATUS].sort(),
    [...PRODUCT_STATUSES].sort(),
  );
});
