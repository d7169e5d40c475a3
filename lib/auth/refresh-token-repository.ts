// The SQL of refresh tokens: rows hold only a token's sha256 hash, its member, its family (one per login)
// and its expiry, used and revoked times. Writes that decide a race are conditional UPDATEs whose
// matched-row count the caller reads.
import { affectedRows, type Db, type Trx } from '../db';

export interface RefreshTokenRow {
  id: number;
  member_id: number;
  family_id: string;
  expires_at: Date | string | number;
  used_at: unknown;
  revoked_at: unknown;
}

const PRUNE_BATCH = 1000;

export function createRefreshTokenRepository(db: Db) {
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
    /** Expired rows (useless), used and revoked rows (a replay of one is recognised without its row). */
    async prune(now: Date): Promise<number> {
      return (
        (await deleteInBatches(() => db('refresh_tokens').where('expires_at', '<', now))) +
        (await deleteInBatches(() => db('refresh_tokens').whereNotNull('used_at'))) +
        (await deleteInBatches(() => db('refresh_tokens').whereNotNull('revoked_at')))
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
