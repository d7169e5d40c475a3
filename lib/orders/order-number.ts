// Order numbers: the UTC date plus 12 random Crockford base32 characters (60 bits), e.g.
// `20261122-7K3QX9M2PA4D`. Unique by the database index, and not a guessable sequence.
import crypto from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function newOrderNumber(now: Date = new Date()): string {
  const bytes = crypto.randomBytes(12);
  let random = '';
  for (const byte of bytes) random += ALPHABET[byte & 31];
  const date = now.toISOString().slice(0, 10).replaceAll('-', '');
  return `${date}-${random}`;
}
