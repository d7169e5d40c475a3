// Refresh tokens in the database: only their sha256 hashes are stored, each with a family id (one family
// per login). Every refresh rotates: the presented token is marked used and a new one of the same family
// is issued. Presenting a used token again means it leaked (or a client raced itself): the whole family
// is revoked, so the thief's and the owner's newest tokens stop working alike.
import crypto from 'node:crypto';
import { retryDeadlocks, type Db, type Trx } from '../db';
import { UnauthenticatedError } from '../errors';
import type { Logger } from '../logger';
import { createRefreshTokenRepository, type RefreshTokenRow } from './refresh-token-repository';
import { hashToken, type RefreshClaims, type TokenService } from './tokens';

const invalid = (message = 'Refresh token is invalid') => new UnauthenticatedError('INVALID_TOKEN', message);

export function createRefreshTokenStore(deps: { db: Db; logger: Logger; tokens: TokenService }) {
  const { db, tokens } = deps;
  const repository = createRefreshTokenRepository(db);
  const log = deps.logger.child({ component: 'RefreshTokens' });

  async function issue(
    memberId: number,
    familyId: string,
    tokenVersion: number | null,
    trx?: Trx,
  ): Promise<string> {
    const { token, claims } = tokens.signRefreshToken(memberId, familyId, tokenVersion);
    await repository.insert(
      { memberId, familyId, tokenHash: hashToken(token), expiresAt: claims.expiresAt },
      trx,
    );
    return token;
  }

  /** Verifies the JWT and finds its stored row; the row must agree with the claims. */
  async function findRow(token: string): Promise<{ row: RefreshTokenRow; claims: RefreshClaims }> {
    const claims = tokens.verifyRefreshToken(token);
    const row = await repository.findByHash(hashToken(token));
    if (!row) {
      // We signed it and it has not expired, so its row was pruned after use (or revocation): a replay.
      // Reuse detection therefore needs no used rows kept; the family's live tokens are revoked as before.
      const revoked = await repository.revokeFamily(claims.familyId, undefined, claims.memberId);
      if (revoked > 0) {
        log.warn(
          { memberId: claims.memberId, revoked },
          'Reuse of a pruned refresh token: token family revoked',
        );
        throw invalid('Refresh token was already used; the session has been revoked');
      }
      throw invalid();
    }
    if (Number(row.member_id) !== claims.memberId || row.family_id !== claims.familyId) throw invalid();
    return { row, claims };
  }

  return {
    /**
     * A new family (a login) granted at the member's `tokenVersion` (read before the password was checked):
     * returns the first refresh token.
     */
    async startFamily(memberId: number, tokenVersion: number): Promise<string> {
      // Housekeeping on the member's own rows: expired tokens are useless; used ones go with the scheduled
      // prune (a replay of a pruned token is still recognised, see findRow).
      await repository.deleteExpiredOf(memberId);
      return issue(memberId, crypto.randomUUID(), tokenVersion);
    },

    /**
     * Rotates `token`: returns its member, the family's next token and the token version the session was granted
     * at (null for a token signed before versions were carried), or throws 401.
     */
    async rotate(
      token: string,
    ): Promise<{ memberId: number; familyId: string; refreshToken: string; tokenVersion: number | null }> {
      const { row, claims } = await findRow(token);
      if (row.revoked_at) throw invalid('Refresh token has been revoked');
      if (new Date(row.expires_at as string).getTime() <= Date.now()) {
        throw new UnauthenticatedError('TOKEN_EXPIRED', 'Refresh token has expired');
      }
      const memberId = Number(row.member_id);
      const next = await retryDeadlocks(() =>
        db.transaction(async (trx) => {
          // The conditional UPDATE decides between racing presentations of the same token: exactly one
          // marks it used; the others see 0 rows and are treated as reuse.
          return (await repository.markUsed(row.id, trx))
            ? issue(memberId, row.family_id, claims.tokenVersion, trx)
            : null;
        }),
      );
      if (next === null) {
        const revoked = await repository.revokeFamily(row.family_id);
        log.warn({ memberId, revoked }, 'Reuse of a rotated refresh token: token family revoked');
        throw invalid('Refresh token was already used; the session has been revoked');
      }
      return { memberId, familyId: row.family_id, refreshToken: next, tokenVersion: claims.tokenVersion };
    },

    /** Logout: revokes the family of a valid refresh token (idempotent). */
    async revokeFamilyOf(token: string): Promise<void> {
      // Our signature names the family; its rows may already be pruned (a repeated logout stays a 204).
      const claims = tokens.verifyRefreshToken(token);
      await repository.revokeFamily(claims.familyId, undefined, claims.memberId);
    },

    /**
     * Scheduled pruning: expired rows (useless), used and revoked rows (a replay of one is recognised without
     * its row, see findRow). The table then holds about one row per live session. `signal`: see
     * deleteInBatches.
     */
    async prune(now = new Date(), signal?: AbortSignal): Promise<number> {
      return repository.prune(now, signal);
    },

    /** Revokes a family by its id (a session whose grant no longer holds). */
    revokeFamily: (familyId: string): Promise<number> => repository.revokeFamily(familyId),

    /** Revokes every refresh token of a member (password change). */
    revokeAllOf: (memberId: number, trx?: Trx): Promise<number> => repository.revokeAllOf(memberId, trx),
  };
}

export type RefreshTokenStore = ReturnType<typeof createRefreshTokenStore>;
