// Refresh tokens in the database: only their sha256 hashes are stored, each with a family id (one family
// per login). Every refresh rotates: the presented token is marked used and a new one of the same family
// is issued. Presenting a used token again means it leaked (or a client raced itself): the whole family
// is revoked, so the thief's and the owner's newest tokens stop working alike.
import crypto from 'node:crypto';
import { affectedRows, type Db, type Trx } from '../db';
import { UnauthenticatedError } from '../errors';
import type { Logger } from '../logger';
import { hashToken, type TokenService } from './tokens';

interface RefreshTokenRow {
  id: number;
  member_id: number;
  family_id: string;
  expires_at: Date | string | number;
  used_at: unknown;
  revoked_at: unknown;
}

const PRUNE_BATCH = 1000;

const invalid = (message = 'Refresh token is invalid') => new UnauthenticatedError('INVALID_TOKEN', message);

export function createRefreshTokenStore(deps: { db: Db; logger: Logger; tokens: TokenService }) {
  const { db, tokens } = deps;
  const log = deps.logger.child({ component: 'RefreshTokens' });

  async function issue(memberId: number, familyId: string, trx?: Trx): Promise<string> {
    const { token, claims } = tokens.signRefreshToken(memberId, familyId);
    await (trx ?? db)('refresh_tokens').insert({
      member_id: memberId,
      family_id: familyId,
      token_hash: hashToken(token),
      expires_at: claims.expiresAt,
      created_at: new Date(),
    });
    return token;
  }

  async function revokeFamily(familyId: string, trx?: Trx, memberId?: number): Promise<number> {
    return affectedRows(
      await (trx ?? db)('refresh_tokens')
        .where({ family_id: familyId, ...(memberId === undefined ? {} : { member_id: memberId }) })
        .whereNull('revoked_at')
        .update({ revoked_at: new Date() }),
    );
  }

  /** Verifies the JWT and finds its stored row; the row must agree with the claims. */
  async function findRow(token: string): Promise<RefreshTokenRow> {
    const claims = tokens.verifyRefreshToken(token);
    const row = (await db('refresh_tokens')
      .where({ token_hash: hashToken(token) })
      .first()) as RefreshTokenRow | undefined;
    if (!row) {
      // We signed it and it has not expired, so its row was pruned after use (or revocation): a replay.
      // Reuse detection therefore needs no used rows kept; the family's live tokens are revoked as before.
      const revoked = await revokeFamily(claims.familyId, undefined, claims.memberId);
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
    return row;
  }

  /** Deletes the rows `select` finds, a batch at a time (no long lock on a big table). */
  async function deleteInBatches(select: () => ReturnType<Db>): Promise<number> {
    let deleted = 0;
    for (;;) {
      const ids = ((await select().select('id').limit(PRUNE_BATCH)) as Array<{ id: number }>).map(
        (r) => r.id,
      );
      if (ids.length === 0) return deleted;
      deleted += affectedRows(await db('refresh_tokens').whereIn('id', ids).delete());
      if (ids.length < PRUNE_BATCH) return deleted;
    }
  }

  return {
    /** A new family (a login): returns the first refresh token. */
    async startFamily(memberId: number): Promise<string> {
      // Housekeeping on the member's own rows: expired tokens are useless (used ones are kept until they
      // expire, because they are what detects a replay), so the table grows with live sessions only.
      await db('refresh_tokens').where({ member_id: memberId }).where('expires_at', '<', new Date()).delete();
      return issue(memberId, crypto.randomUUID());
    },

    /** Rotates `token`: returns its member and the family's next token, or throws 401. */
    async rotate(token: string): Promise<{ memberId: number; refreshToken: string }> {
      const row = await findRow(token);
      if (row.revoked_at) throw invalid('Refresh token has been revoked');
      if (new Date(row.expires_at as string).getTime() <= Date.now()) {
        throw new UnauthenticatedError('TOKEN_EXPIRED', 'Refresh token has expired');
      }
      const memberId = Number(row.member_id);
      const next = await db.transaction(async (trx) => {
        // The conditional UPDATE decides between racing presentations of the same token: exactly one
        // marks it used; the others see 0 rows and are treated as reuse.
        const marked = affectedRows(
          await trx('refresh_tokens')
            .where({ id: row.id })
            .whereNull('used_at')
            .whereNull('revoked_at')
            .update({ used_at: new Date() }),
        );
        return marked === 1 ? issue(memberId, row.family_id, trx) : null;
      });
      if (next === null) {
        const revoked = await revokeFamily(row.family_id);
        log.warn({ memberId, revoked }, 'Reuse of a rotated refresh token: token family revoked');
        throw invalid('Refresh token was already used; the session has been revoked');
      }
      return { memberId, refreshToken: next };
    },

    /** Logout: revokes the family of a valid refresh token (idempotent). */
    async revokeFamilyOf(token: string): Promise<void> {
      // Our signature names the family; its rows may already be pruned (a repeated logout stays a 204).
      const claims = tokens.verifyRefreshToken(token);
      await revokeFamily(claims.familyId, undefined, claims.memberId);
    },

    /**
     * Scheduled pruning: expired rows (useless), used and revoked rows (a replay of one is recognised without
     * its row, see findRow). The table then holds about one row per live session.
     */
    async prune(now = new Date()): Promise<number> {
      return (
        (await deleteInBatches(() => db('refresh_tokens').where('expires_at', '<', now))) +
        (await deleteInBatches(() => db('refresh_tokens').whereNotNull('used_at'))) +
        (await deleteInBatches(() => db('refresh_tokens').whereNotNull('revoked_at')))
      );
    },

    /** Revokes every refresh token of a member (password change). */
    async revokeAllOf(memberId: number, trx?: Trx): Promise<number> {
      return affectedRows(
        await (trx ?? db)('refresh_tokens')
          .where({ member_id: memberId })
          .whereNull('revoked_at')
          .update({ revoked_at: new Date() }),
      );
    },
  };
}

export type RefreshTokenStore = ReturnType<typeof createRefreshTokenStore>;
