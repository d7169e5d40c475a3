// JWT access and refresh tokens. A `typ` claim keeps them apart (a refresh token is never accepted as a
// Bearer token and vice versa); algorithm, issuer and audience are pinned on verification.
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Config, Role } from '../config';
import { UnauthenticatedError } from '../errors';
import { createVerifiedTokenCache } from './verified-tokens';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 7 * 24 * 3600;

export interface AuthMember {
  id: number;
  role: Role;
}

/** What an access token claims: the member, its role and its token version when the token was issued. */
export interface AccessClaims extends AuthMember {
  tokenVersion: number;
}

/** Decides whether verified claims still hold (the member's role and token version); see member-versions.ts. */
export type AccessCheck = (claims: AccessClaims) => Promise<AuthMember>;

export interface RefreshClaims {
  memberId: number;
  familyId: string;
  /**
   * The member's token version the session was granted at (a login reads it before checking the password); a
   * refresh is refused once the member's version moved on (a password change). Null in tokens signed before
   * the claim existed.
   */
  tokenVersion: number | null;
  tokenId: string;
  expiresAt: Date;
}

const ROLES: readonly string[] = ['BUYER', 'SELLER', 'ADMIN'];

/**
 * `check` is needed only by a service that authenticates requests; scripts that just sign tokens omit it.
 * `verifiedTokenEntries` bounds the cache of verified access tokens (0 turns it off).
 */
export function createTokenService(
  jwtConfig: Config['jwt'],
  check?: AccessCheck,
  options: { verifiedTokenEntries?: number } = {},
) {
  const verified = createVerifiedTokenCache<AccessClaims>({ maxEntries: options.verifiedTokenEntries });
  // One KeyObject for the HMAC secret: given a string, jsonwebtoken builds a key on every call, which was
  // a fifth of the server's CPU under order load.
  const key = crypto.createSecretKey(Buffer.from(jwtConfig.secret, 'utf8'));
  const signOptions = (expiresIn: number): jwt.SignOptions => ({
    algorithm: jwtConfig.algorithm,
    issuer: jwtConfig.issuer,
    audience: jwtConfig.audience,
    expiresIn,
  });

  function verify(token: string, type: 'access' | 'refresh'): jwt.JwtPayload {
    let payload: string | jwt.JwtPayload;
    try {
      payload = jwt.verify(token, key, {
        algorithms: [jwtConfig.algorithm],
        issuer: jwtConfig.issuer,
        audience: jwtConfig.audience,
      });
    } catch (err) {
      if (err instanceof jwt.TokenExpiredError)
        throw new UnauthenticatedError('TOKEN_EXPIRED', 'Token has expired');
      throw new UnauthenticatedError('INVALID_TOKEN', 'Token is invalid');
    }
    // jsonwebtoken accepts a token without `exp` as never expiring: every token we sign has both.
    if (
      typeof payload === 'string' ||
      payload.typ !== type ||
      !/^\d+$/.test(String(payload.sub)) ||
      typeof payload.exp !== 'number' ||
      typeof payload.iat !== 'number'
    ) {
      throw new UnauthenticatedError('INVALID_TOKEN', 'Token is invalid');
    }
    return payload;
  }

  function verifyAccessToken(token: string): AccessClaims {
    const hit = verified.get(token);
    if (hit) return hit;
    const payload = verify(token, 'access');
    if (!ROLES.includes(payload.role) || !Number.isSafeInteger(payload.ver) || payload.ver < 0)
      throw new UnauthenticatedError('INVALID_TOKEN', 'Token is invalid');
    const claims: AccessClaims = Object.freeze({
      id: Number(payload.sub),
      role: payload.role as Role,
      tokenVersion: payload.ver,
    });
    verified.set(token, claims, payload.exp!);
    return claims;
  }

  return {
    signAccessToken(member: AccessClaims): string {
      return jwt.sign({ typ: 'access', role: member.role, ver: member.tokenVersion }, key, {
        ...signOptions(ACCESS_TOKEN_TTL_SECONDS),
        subject: String(member.id),
      });
    },

    verifyAccessToken,

    /** A request's Bearer token: verified, then checked against the member's current role and version. */
    async authenticate(token: string): Promise<AuthMember> {
      if (!check) throw new Error('This token service was created without an access check');
      return check(verifyAccessToken(token));
    },

    /** A new refresh token of `familyId`; its hash (never the token) is what gets stored. */
    signRefreshToken(
      memberId: number,
      familyId: string,
      tokenVersion: number | null,
    ): { token: string; claims: RefreshClaims } {
      const tokenId = crypto.randomUUID();
      const version = tokenVersion === null ? {} : { ver: tokenVersion };
      const token = jwt.sign({ typ: 'refresh', fam: familyId, ...version }, key, {
        ...signOptions(REFRESH_TOKEN_TTL_SECONDS),
        subject: String(memberId),
        jwtid: tokenId,
      });
      const expiresAt = new Date(Date.now() + REFRESH_TOKEN_TTL_SECONDS * 1000);
      return { token, claims: { memberId, familyId, tokenVersion, tokenId, expiresAt } };
    },

    verifyRefreshToken(token: string): RefreshClaims {
      const payload = verify(token, 'refresh');
      if (
        typeof payload.fam !== 'string' ||
        typeof payload.jti !== 'string' ||
        typeof payload.exp !== 'number' ||
        (payload.ver !== undefined && (!Number.isSafeInteger(payload.ver) || payload.ver < 0))
      ) {
        throw new UnauthenticatedError('INVALID_TOKEN', 'Token is invalid');
      }
      return {
        memberId: Number(payload.sub),
        familyId: payload.fam,
        tokenVersion: payload.ver ?? null,
        tokenId: payload.jti,
        expiresAt: new Date(payload.exp * 1000),
      };
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;

export function hashToken(token: string): string {
  return crypto.createHash('sha256').update(token).digest('hex');
}
