// Order numbers come from a pool of random bytes and a cached date prefix (lib/orders/order-number.ts): each
// byte is used once (no two numbers repeat across pool refills) and the prefix follows the UTC day of `now`.
import test from 'ava';
import { newOrderNumber, RANDOM_POOL_NUMBERS } from '../../lib/orders/order-number';

const FORMAT = /^\d{8}-[0-9A-HJKMNP-TV-Z]{12}$/;

test('numbers have the date and 12 Crockford base32 characters, and never repeat across pool refills', (t) => {
  const now = new Date('2026-11-24T06:00:00.000Z');
  const count = RANDOM_POOL_NUMBERS * 40 + 7;
  const seen = new Set<string>();
  const randomParts = new Set<string>();
  for (let i = 0; i < count; i++) {
    const number = newOrderNumber(now);
    t.regex(number, FORMAT);
    t.true(number.startsWith('20261124-'));
    seen.add(number);
    randomParts.add(number.slice(9));
  }
  t.is(seen.size, count);
  t.is(randomParts.size, count);
});

test('the date prefix follows the UTC day of `now`, also back and forth across midnight', (t) => {
  t.true(newOrderNumber(new Date('2026-11-22T23:59:59.999Z')).startsWith('20261122-'));
  t.true(newOrderNumber(new Date('2026-11-23T00:00:00.000Z')).startsWith('20261123-'));
  t.true(newOrderNumber(new Date('2026-11-22T12:00:00.000Z')).startsWith('20261122-'));
  t.true(newOrderNumber(new Date('1999-12-31T23:59:59.000Z')).startsWith('19991231-'));
  t.regex(newOrderNumber(), FORMAT);
});
