// Order numbers: the UTC date plus 12 random Crockford base32 characters (60 bits), e.g.
// `20261122-7K3QX9M2PA4D`. Unique by the database index, and not a guessable sequence.
import crypto from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RANDOM_CHARS = 12;
const DAY_MS = 86_400_000;

/**
 * Random bytes are drawn from the CSPRNG a pool at a time (one randomFillSync per 256 numbers instead of
 * one per number: it was ~1.5% of the server's busy time under order load) and each byte is used once.
 */
export const RANDOM_POOL_NUMBERS = 256;
const pool = Buffer.alloc(RANDOM_CHARS * RANDOM_POOL_NUMBERS);
let poolOffset = pool.length;

// The date part of the last number's day (a group commit numbers its whole batch with one `now`).
let prefixDay = NaN;
let prefix = '';

export function newOrderNumber(now: Date = new Date()): string {
  const day = Math.floor(now.getTime() / DAY_MS);
  if (day !== prefixDay) {
    prefix = now.toISOString().slice(0, 10).replaceAll('-', '');
    prefixDay = day;
  }
  if (poolOffset === pool.length) {
    crypto.randomFillSync(pool);
    poolOffset = 0;
  }
  let random = '';
  for (let end = poolOffset + RANDOM_CHARS; poolOffset < end; poolOffset++)
    random += ALPHABET[pool[poolOffset] & 31];
  return `${prefix}-${random}`;
}
