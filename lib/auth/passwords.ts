// bcrypt through its async API only, so hashing runs on libuv's pool and never blocks the event loop.
import bcrypt from 'bcrypt';
import { ValidationError } from '../errors';

export const PASSWORD_MIN_BYTES = 8;
export const PASSWORD_MAX_BYTES = 72; // bcrypt ignores everything after 72 bytes

export function passwordByteLengthError(password: string): string | null {
  const bytes = Buffer.byteLength(password, 'utf8');
  if (bytes < PASSWORD_MIN_BYTES) return `password must be at least ${PASSWORD_MIN_BYTES} bytes`;
  if (bytes > PASSWORD_MAX_BYTES) return `password must be at most ${PASSWORD_MAX_BYTES} bytes`;
  return null;
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  const problem = passwordByteLengthError(password);
  if (problem) throw new ValidationError('Invalid password', [{ field: 'password', message: problem }]);
  return bcrypt.hash(password, cost);
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return bcrypt.compare(password, hash);
}

/** The cost a bcrypt hash was made at (NaN for a string that is no bcrypt hash). */
export function hashCost(hash: string): number {
  try {
    return bcrypt.getRounds(hash);
  } catch {
    return NaN;
  }
}
