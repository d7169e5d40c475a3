// A member's own profile (read, update, password change) and the admin's member list.
import type { Config } from '../config';
import { retryDeadlocks, type Db } from '../db';
import { UnauthenticatedError, ValidationError, type FieldError } from '../errors';
import type { EventBus } from '../events';
import type { Logger } from '../logger';
import type { AuthMember } from '../auth/tokens';
import type { PasswordHasher } from '../auth/password-hasher';
import type { LoginThrottle } from '../auth/login-throttle';
import type { RefreshTokenStore } from '../auth/refresh-token-store';
import { mapPage, type PageSlice } from '../query-helpers';
import type { Member } from './member-model';
import { createMemberRepository } from './member-repository';
import { toMemberJson, type MemberJson } from './member-json';
import type { ListMembersQuery, UpdateMeInput } from './member-schemas';

export interface MemberDeps {
  config: Config;
  db: Db;
  logger: Logger;
  refreshTokens: RefreshTokenStore;
  hasher: PasswordHasher;
  /** Announces `membersChanged` after a password change (the token checks drop their copy of the version). */
  events: EventBus;
  throttle: LoginThrottle;
}

export function createMemberService(deps: MemberDeps) {
  const { db, refreshTokens, hasher, events, throttle } = deps;
  const log = deps.logger.child({ component: 'MemberService' });
  const repository = createMemberRepository(db);

  /**
   * Tells every holder of the member's token version that it moved (`membersChanged`; in a cluster every instance,
   * over NATS). Resolves after this process's listeners ran, so the old access tokens are refused here before the
   * answer; a failing listener is logged, never the request's error (the change is committed).
   */
  async function announceTokensEnded(memberId: number): Promise<void> {
    await events
      .emit('membersChanged', { memberIds: [memberId] })
      .catch((err: unknown) => log.error({ err, memberId }, 'Announcing a password change failed'));
  }

  /** The caller's member row; a valid token of a member that no longer exists is an invalid token. */
  async function load(auth: AuthMember): Promise<Member> {
    const member = await repository.findById(auth.id);
    if (!member) throw new UnauthenticatedError('INVALID_TOKEN', 'The member of this token no longer exists');
    return member;
  }

  return {
    async getMe(auth: AuthMember): Promise<MemberJson> {
      return toMemberJson(await load(auth));
    },

    /**
     * Profile update; a password change needs the current password and ends every session (refresh family).
     * The currentPassword check is throttled per member (LoginThrottle.checkCurrentPassword), so a stolen access
     * token is no unlimited password oracle.
     */
    async updateMe(auth: AuthMember, input: UpdateMeInput): Promise<MemberJson> {
      const member = await load(auth);
      const errors: FieldError[] = [];
      if (input.password !== undefined && !input.currentPassword) {
        errors.push({
          field: 'currentPassword',
          message: 'currentPassword is required to change the password',
        });
      }
      if (input.currentPassword !== undefined && input.password === undefined) {
        errors.push({ field: 'password', message: 'password is required with currentPassword' });
      }
      // null is what GET /members/me shows a non-seller: sending it back unchanged is no change.
      if (input.businessNumber != null && member.role !== 'SELLER') {
        errors.push({ field: 'businessNumber', message: 'businessNumber is only for sellers' });
      }
      if (errors.length > 0) throw new ValidationError('Invalid request body', errors);
      if (member.role === 'SELLER' && input.businessNumber !== undefined && !input.businessNumber?.trim()) {
        throw new ValidationError(
          'A seller must keep a business registration number',
          [{ field: 'businessNumber', message: 'businessNumber must not be blank for sellers' }],
          'BUSINESS_NUMBER_REQUIRED',
        );
      }

      const patch: Partial<Member> = {};
      if (input.name !== undefined) patch.name = input.name;
      if (input.phone !== undefined) patch.phone = input.phone;
      if (input.businessNumber) patch.businessNumber = input.businessNumber.trim();
      if (input.password !== undefined) {
        const passed = await throttle.checkCurrentPassword(member.id, () =>
          hasher.verify(input.currentPassword ?? '', member.passwordHash),
        );
        if (!passed) {
          throw new ValidationError('Invalid request body', [
            { field: 'currentPassword', message: 'currentPassword is incorrect' },
          ]);
        }
        patch.passwordHash = await hasher.hash(input.password);
      }
      if (Object.keys(patch).length === 0) return toMemberJson(member);
      patch.updatedAt = new Date();

      let revoked = 0;
      let applied: boolean;
      try {
        applied = await retryDeadlocks(() =>
          db.transaction(async (trx) => {
            // A password change applies only over the password its currentPassword was checked against: two
            // changes checked at once against the same one cannot both apply (the second would undo the first).
            const patched = await repository.patch(
              member.id,
              patch,
              trx,
              patch.passwordHash ? member.passwordHash : undefined,
            );
            if (!patched && patch.passwordHash) return false;
            if (patch.passwordHash) {
              revoked = await refreshTokens.revokeAllOf(member.id, trx);
              // Every access token of the member carries the old version: they stop working.
              await repository.bumpTokenVersion(member.id, trx);
            }
            return true;
          }),
        );
      } finally {
        // Also when the transaction failed: a COMMIT lost on the way may have applied the change, and forgetting a
        // version that did not move only costs one read.
        if (patch.passwordHash) await announceTokensEnded(member.id);
      }
      if (!applied) {
        throw new ValidationError('Invalid request body', [
          {
            field: 'currentPassword',
            message: 'currentPassword is incorrect: the password was changed meanwhile',
          },
        ]);
      }
      if (patch.passwordHash)
        log.info({ memberId: member.id, revoked }, 'Password changed; refresh tokens revoked');
      return toMemberJson(await load(auth));
    },

    /** Admin list: optional role filter, keyword = case-insensitive partial match on e-mail or name. */
    async list(query: ListMembersQuery): Promise<PageSlice<MemberJson>> {
      const page = await repository.list({ role: query.role, keyword: query.keyword }, query);
      return mapPage(page, (members) => members.map(toMemberJson));
    },
  };
}

export type MemberService = ReturnType<typeof createMemberService>;
