// The cursor of GET /products/cursor: Base64 of `<createdAt as yyyy-MM-ddTHH:mm:ss.SSS (UTC)>:<id>`.
// We emit URL-safe Base64 without padding (no escaping needed in a query string) and accept both
// alphabets, padded or not. Anything else is INVALID_CURSOR.
// A space is not read back as '+' (what a query string makes of an unescaped '+'): the text is digits,
// '-', 'T', ':' and '.', whose Base64 never reaches the 6-bit values 62 and 63, so a valid cursor holds
// letters and digits only, in either alphabet, and a space can never come from one.
import { BadRequestError } from '../errors';

export interface CursorPosition {
  createdAt: Date;
  id: number;
}

export function encodeCursor(position: CursorPosition): string {
  const text = `${position.createdAt.toISOString().slice(0, 23)}:${position.id}`;
  return Buffer.from(text, 'utf8').toString('base64url');
}

const invalid = () => new BadRequestError('INVALID_CURSOR', 'cursor is not a valid cursor of this list');

export function decodeCursor(cursor: string): CursorPosition {
  const compact = cursor.trim();
  // Standard (+ /) or URL-safe (- _) alphabet, optional padding; Node's decoder would silently skip junk.
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact) || /[+/].*[-_]|[-_].*[+/]/.test(compact)) throw invalid();
  const text = Buffer.from(compact.replace(/=+$/, ''), 'base64').toString('utf8');
  const colon = text.lastIndexOf(':');
  if (colon < 0) throw invalid();
  const stamp = text.slice(0, colon);
  const idText = text.slice(colon + 1);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/.test(stamp) || !/^\d{1,10}$/.test(idText))
    throw invalid();
  const createdAt = new Date(`${stamp}Z`);
  const id = Number(idText);
  // Round trip rejects impossible dates such as 2026-02-30 that Date would roll over.
  if (
    Number.isNaN(createdAt.getTime()) ||
    createdAt.toISOString().slice(0, 23) !== stamp ||
    id < 1 ||
    id > 2_147_483_647
  )
    throw invalid();
  return { createdAt, id };
}
