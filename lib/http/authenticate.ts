// Authentication of a route: the Bearer token of the Authorization header is verified and the caller
// checked against the route's requirement (public, any role, or a list of roles) before validation runs.
import type { Context, Middleware } from 'koa';
import type { Role } from '../config';
import type { AuthMember, TokenService } from '../auth/tokens';
import { ForbiddenError, UnauthenticatedError } from '../errors';

export type AuthRequirement = 'public' | 'any' | Role[];

/** What a handler gets as `auth`: only a public route may run without a caller. */
export type CallerOf<A extends AuthRequirement> = A extends 'public' ? AuthMember | null : AuthMember;

export function bearerToken(ctx: Context): string | null {
  const header = ctx.get('Authorization');
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new UnauthenticatedError('INVALID_TOKEN', 'Authorization header must be "Bearer <token>"');
  return match[1];
}

/**
 * Sets `ctx.state.auth` to the caller (or null on a public route without a token). `ignoreBearer` public routes
 * (signup, login, refresh, logout) never look at the header, so a stale access token cannot block a refresh.
 * Returns a promise only when a token has to be checked: a public request without one costs no async step.
 */
export function admitCaller(
  requirement: AuthRequirement,
  tokens: TokenService,
  ctx: Context,
  ignoreBearer = false,
): Promise<void> | void {
  if (ignoreBearer && requirement === 'public') {
    ctx.state.auth = null;
    return;
  }
  const token = bearerToken(ctx);
  if (!token) {
    if (requirement !== 'public')
      throw new UnauthenticatedError('UNAUTHENTICATED', 'Authentication is required');
    ctx.state.auth = null;
    return;
  }
  return tokens.authenticate(token).then((auth) => {
    if (Array.isArray(requirement) && !requirement.includes(auth.role)) {
      throw new ForbiddenError(`This operation requires the role ${requirement.join(' or ')}`);
    }
    ctx.state.auth = auth;
  });
}

/** `admitCaller` as a middleware. */
export function authenticate(
  requirement: AuthRequirement,
  tokens: TokenService,
  options: { ignoreBearer?: boolean } = {},
): Middleware {
  return async function authenticateMiddleware(ctx, next) {
    await admitCaller(requirement, tokens, ctx, options.ignoreBearer);
    return next();
  };
}

/** The caller `authenticate` admitted; a route that requires one never reaches its handler without it. */
export function callerOf(ctx: Context): AuthMember | null {
  return (ctx.state.auth as AuthMember | null | undefined) ?? null;
}
