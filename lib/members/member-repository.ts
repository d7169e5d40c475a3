// The SQL of the members area: single members through the Objection model, the admin's list through the
// query builder (one page and its count).
import { dialect, type Db, type Trx } from '../db';
import {
  fetchPage,
  mapPage,
  whereContainsIgnoringCase,
  type PageRequest,
  type PageSlice,
} from '../query-helpers';
import { Member } from './member-model';

export interface MemberListFilter {
  role?: Member['role'];
  /** Case-insensitive, literal partial match on e-mail or name. */
  keyword?: string;
}

export function createMemberRepository(db: Db) {
  return {
    async findById(memberId: number): Promise<Member | undefined> {
      return Member.query(db).findById(memberId);
    },

    /**
     * Applies `patch`; with `unlessPasswordChanged`, only while the password hash is still that one (the hash its
     * currentPassword was checked against). False when that no longer holds: nothing was written.
     */
    async patch(
      memberId: number,
      patch: Partial<Member>,
      trx: Trx,
      unlessPasswordChanged?: string,
    ): Promise<boolean> {
      const query = Member.query(trx).patch(patch).where('id', memberId);
      if (unlessPasswordChanged !== undefined) query.where('password_hash', unlessPasswordChanged);
      return (await query) > 0;
    },

    /** Every access token the member holds carries the old version: bumping it ends them (lib/auth). */
    async bumpTokenVersion(memberId: number, trx: Trx): Promise<void> {
      await trx('members').where('id', memberId).increment('token_version', 1);
    },

    /** Newest first. */
    async list(filter: MemberListFilter, request: PageRequest): Promise<PageSlice<Member>> {
      const q = db('members').select(
        'id',
        'email',
        'name',
        'phone',
        'role',
        'business_number',
        'created_at',
        'updated_at',
      );
      if (filter.role) q.where('role', filter.role);
      if (filter.keyword) {
        const { keyword } = filter;
        const mysql = dialect.isMysql(db);
        q.where((either) =>
          either
            .where((w) => whereContainsIgnoringCase(w, 'email', keyword, mysql))
            .orWhere((w) => whereContainsIgnoringCase(w, 'name', keyword, mysql)),
        );
      }
      q.orderBy('id', 'desc');
      const page = await fetchPage<Record<string, unknown>>(q, request);
      return mapPage(page, (rows) => rows.map((row) => Member.fromDatabaseJson(row)));
    },
  };
}

export type MemberRepository = ReturnType<typeof createMemberRepository>;
