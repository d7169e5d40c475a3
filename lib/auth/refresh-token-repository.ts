// The SQL of refresh tokens: rows hold only a token's sha256 hash, its member, its family (one per login)
// and its expiry, used and revoked times. Writes that decide a race are conditional UPDATEs whose
// matched-row count the caller reads.
import { affectedRows, type Db, type Trx } from '../db';
import { deleteInBatches } from '../query-helpers';

export interface RefreshTokenRow {
  id: number;
  member_id: number;
  family_id: string;
  expires_at: Date | string | number;
  used_at: unknown;
  revoked_at: unknown;
}

export function createRefreshTokenRepository(db: Db) {
  return {
    /** Expired rows (useless), used and revoked rows (a replay of one is recognised without its row). */
    async prune(now: Date, signal?: AbortSignal): Promise<number> {
      return (
        (await deleteInBatches(db, 'refresh_tokens', (q) => q.where('expires_at', '<', now), signal)) +
        (await deleteInBatches(db, 'refresh_tokens', (q) => q.whereNotNull('used_at'), signal)) +
        (await deleteInBatches(db, 'refresh_tokens', (q) => q.whereNotNull('revoked_at'), signal))
      );
    },

    async insert(
      token: { memberId: number; familyId: string; tokenHash: string; expiresAt: Date },
      trx?: Trx,
    ): Promise<void> {
      await (trx ?? db)('refresh_tokens').insert({
        member_id: token.memberId,
        family_id: token.familyId,
        token_hash: token.tokenHash,
        expires_at: token.expiresAt,
        created_at: new Date(),
      });
    },

    async findByHash(tokenHash: string): Promise<RefreshTokenRow | undefined> {
      return (await db('refresh_tokens').where({ token_hash: tokenHash }).first()) as
        RefreshTokenRow | undefined;
    },

    /** Removes the member's expired rows; returns how many. */
    async deleteExpiredOf(memberId: number): Promise<number> {
      return affectedRows(
        await db('refresh_tokens')
          .where({ member_id: memberId })
          .where('expires_at', '<', new Date())
          .delete(),
      );
    },

    /** Marks a live, unused token used; false when another presentation got there first. */
    async markUsed(id: number, trx: Trx): Promise<boolean> {
      const marked = affectedRows(
        await trx('refresh_tokens')
          .where({ id })
          .whereNull('used_at')
          .whereNull('revoked_at')
          .update({ used_at: new Date() }),
      );
      return marked === 1;
    },

    /** Revokes every live token of the family (of that member, when given); returns how many. */
    async revokeFamily(familyId: string, trx?: Trx, memberId?: number): Promise<number> {
      return affectedRows(
        await (trx ?? db)('refresh_tokens')
          .where({ family_id: familyId, ...(memberId === undefined ? {} : { member_id: memberId }) })
          .whereNull('revoked_at')
          .update({ revoked_at: new Date() }),
      );
    },

    /** Revokes every live token of the member; returns how many. */
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
