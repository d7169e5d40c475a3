// The JWT secret of a start without JWT_SECRET (never production): 48 random bytes generated once and kept in
// DATA_DIR/jwt-secret, readable by the owner only, so a restart keeps every session valid and no secret ever
// lives in the repository.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const LOCAL_JWT_SECRET_FILE = 'jwt-secret';
const MIN_LENGTH = 32;

export class LocalSecretError extends Error {}

function read(file: string): string {
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new LocalSecretError(
      `${file} is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it or set JWT_SECRET`,
    );
  }
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret.length < MIN_LENGTH) {
    throw new LocalSecretError(
      `${file} holds fewer than ${MIN_LENGTH} characters; delete it or set JWT_SECRET`,
    );
  }
  return secret;
}

/** The secret in `dataDir`, created on first use. Safe when several processes start at once on one DATA_DIR. */
export function localJwtSecret(dataDir: string): string {
  const file = path.join(dataDir, LOCAL_JWT_SECRET_FILE);
  if (fs.existsSync(file)) return read(file);
  fs.mkdirSync(dataDir, { recursive: true });
  // Written completely under a private name, then linked into place: link() fails if another process won the
  // race, and then everyone reads the winner's secret (never a half-written file).
  const temp = `${file}.${process.pid}.${crypto.randomBytes(6).toString('hex')}`;
  fs.writeFileSync(temp, `${crypto.randomBytes(48).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(temp, { force: true });
  }
  return read(file);
}
