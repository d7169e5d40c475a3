// Signup, login, refresh and logout. Login answers the same INVALID_CREDENTIALS for an unknown e-mail
// and a wrong password, and runs a bcrypt compare in both cases so the timing does not tell them apart.
import crypto from 'node:crypto';
import type { Config } from '../config';
import { isUniqueViolation, type Db } from '../db';
import { ConflictError, UnauthenticatedError, ValidationError } from '../errors';
import type { Logger } from '../logger';
import { Member } from '../members/member-model';
import { toMemberJson, type MemberJson } from '../members/member-json';
import type { LoginInput, SignupInput, TokenPair } from './auth-schemas';
import type { LoginThrottle } from './login-throttle';
import type { PasswordHasher } from './password-hasher';
import { PASSWORD_MAX_BYTES } from './passwords';
import type { RefreshTokenStore } from './refresh-token-store';
import type { RequestLimits } from './request-limits';
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, type TokenService } from './tokens';

export type { TokenPair };

export interface AuthDeps {
  config: Config;
  db: Db;
  logger: Logger;
  tokens: TokenService;
  refreshTokens: RefreshTokenStore;
  throttle: LoginThrottle;
  hasher: PasswordHasher;
  requestLimits: RequestLimits;
}

const emailTaken = () =>
  new ConflictError('EMAIL_ALREADY_EXISTS', 'An account with this e-mail address already exists');
const invalidCredentials = () =>
  new UnauthenticatedError('INVALID_CREDENTIALS', 'E-mail or password is incorrect');

export function createAuthService(deps: AuthDeps) {
  const { db, tokens, refreshTokens, throttle, hasher, requestLimits } = deps;
  const log = deps.logger.child({ component: 'AuthService' });
  let dummyHash: Promise<string> | null = null;
  // A hash of a random password at the configured cost, compared against when the e-mail is unknown.
  const timingHash = () =>
    (dummyHash ??= hasher.hash(crypto.randomBytes(24).toString('base64')).catch((err: unknown) => {
      dummyHash = null; // a busy hasher (503) must not leave a rejected promise here for good
      throw err;
    }));

  /**
   * A hash made at another cost than BCRYPT_COST (the cost was changed since) is made again at login, when the
   * password is at hand: compares then take the same time as the unknown e-mails' (timingHash), so timing does not
   * tell which addresses have accounts, and a raised cost protects every account that logs in. Only over the hash
   * the password was checked against (a password change meanwhile wins). Not done is no failure of the login.
   */
  async function rehash(member: Member, password: string): Promise<void> {
    try {
      const fresh = await hasher.hash(password);
      await Member.query(db)
        .patch({ passwordHash: fresh } as Partial<Member>)
        .where('id', member.id)
        .where('password_hash', member.passwordHash);
      log.info({ memberId: member.id }, 'Password hash made again at the configured cost');
    } catch (err) {
      log.warn({ err, memberId: member.id }, 'Making the password hash again at the configured cost failed');
    }
  }

  function tokenPair(member: Pick<Member, 'id' | 'role' | 'tokenVersion'>, refreshToken: string): TokenPair {
    return {
      accessToken: tokens.signAccessToken({
        id: member.id,
        role: member.role,
        tokenVersion: Number(member.tokenVersion),
      }),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
      refreshExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
    };
  }

  return {
    async signup(input: SignupInput, clientAddress: string): Promise<MemberJson> {
      await requestLimits.signup(clientAddress);
      const businessNumber = input.businessNumber?.trim() || null;
      if (input.role === 'SELLER' && !businessNumber) {
        throw new ValidationError(
          'A seller must supply a business registration number',
          [{ field: 'businessNumber', message: 'businessNumber is required for sellers' }],
          'BUSINESS_NUMBER_REQUIRED',
        );
      }
      if (input.role !== 'SELLER' && businessNumber) {
        throw new ValidationError('Invalid request body', [
          { field: 'businessNumber', message: 'businessNumber is only for sellers' },
        ]);
      }
      if (await Member.query(db).findOne({ email: input.email })) throw emailTaken();
      const passwordHash = await hasher.hash(input.password);
      const now = new Date();
      let id: number;
      try {
        // The unique index on email decides between concurrent signups; the check above only saves a hash.
        // Plain knex (not Objection, which wraps driver errors) so isUniqueViolation sees the driver's code.
        [id] = await db('members').insert({
          email: input.email,
          password_hash: passwordHash,
          name: input.name,
          phone: input.phone,
          role: input.role,
          business_number: businessNumber,
          created_at: now,
          updated_at: now,
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw emailTaken();
        throw err;
      }
      const member = await Member.query(db).findById(id);
      if (!member) throw new Error(`Member ${id} vanished right after its insert`);
      log.info({ memberId: member.id, role: member.role }, 'Member signed up');
      return toMemberJson(member);
    },

    async login(input: LoginInput, clientAddress: string): Promise<TokenPair> {
      let member: Member | undefined;
      const passed = await throttle.check(input.email, clientAddress, async () => {
        member = await Member.query(db).findOne({ email: input.email });
        const matches = await hasher.verify(input.password, member?.passwordHash ?? (await timingHash()));
        // bcrypt ignores bytes after the 72nd, so a longer password must not log in on its prefix.
        return (
          member !== undefined && matches && Buffer.byteLength(input.password, 'utf8') <= PASSWORD_MAX_BYTES
        );
      });
      if (!passed || !member) {
        log.info({ memberId: member?.id ?? null }, 'Login failed');
        throw invalidCredentials();
      }
      if (hasher.outdated(member.passwordHash)) await rehash(member, input.password);
      // Granted at the version read before the password check: a password change that commits meanwhile (its
      // revocation finds no row of this session yet) still ends it, at its first refresh.
      return tokenPair(member, await refreshTokens.startFamily(member.id, Number(member.tokenVersion)));
    },

    async refresh(refreshToken: string, clientAddress: string): Promise<TokenPair> {
      await requestLimits.refresh(clientAddress);
      const {
        memberId,
        familyId,
        refreshToken: next,
        tokenVersion,
      } = await refreshTokens.rotate(refreshToken);
      // The role is read afresh, so a new access token always carries the member's current role.
      const member = await Member.query(db).findById(memberId);
      if (!member) throw new UnauthenticatedError('INVALID_TOKEN', 'Refresh token is invalid');
      // The password changed since the session was granted (its revocation may have run before this session's
      // newest row existed): the session ends here.
      if (tokenVersion !== null && Number(member.tokenVersion) !== tokenVersion) {
        await refreshTokens.revokeFamily(familyId);
        log.warn({ memberId }, 'Refresh of a session granted before a password change: token family revoked');
        throw new UnauthenticatedError('INVALID_TOKEN', 'The session ended: the password was changed');
      }
      return tokenPair(member, next);
    },

    async logout(refreshToken: string): Promise<void> {
      await refreshTokens.revokeFamilyOf(refreshToken);
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
