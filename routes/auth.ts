// POST /auth/signup, /auth/login, /auth/refresh, /auth/logout.
import { refreshTokenBody, loginBody, signupBody, tokenPairShape } from '../lib/auth/auth-schemas';
import { BUSY_HASHER, defineRoute, errorResponses, unavailable, type RouteDef } from '../lib/http/route';
import { memberShape } from '../lib/members/member-schemas';
import type { Services } from '../lib/services';

export function authRoutes(services: Pick<Services, 'auth'>): RouteDef[] {
  return [
    defineRoute({
      method: 'post',
      path: '/auth/signup',
      summary: 'Sign up as a buyer or a seller (sellers need a business number)',
      tags: ['Auth'],
      auth: 'public',
      ignoreBearer: true,
      body: signupBody,
      responses: {
        201: { description: 'The new member', schema: memberShape },
        ...errorResponses(
          [400, 'VALIDATION_ERROR (also role ADMIN), BUSINESS_NUMBER_REQUIRED'],
          [409, 'EMAIL_ALREADY_EXISTS'],
          413,
          415,
          [429, 'TOO_MANY_REQUESTS: too many signups from this address or in total (Retry-After)'],
          unavailable(BUSY_HASHER),
        ),
      },
      handler: async ({ body }, ctx) => {
        ctx.status = 201;
        ctx.body = await services.auth.signup(body, ctx.ip);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/auth/login',
      summary: 'Log in: an access token (1 h) and a refresh token (7 d)',
      tags: ['Auth'],
      auth: 'public',
      ignoreBearer: true,
      body: loginBody,
      responses: {
        200: { description: 'Tokens', schema: tokenPairShape },
        ...errorResponses(
          400,
          [401, 'INVALID_CREDENTIALS (unknown e-mail or wrong password, indistinguishable)'],
          413,
          415,
          [
            429,
            'TOO_MANY_REQUESTS after 5 failed logins for this e-mail and address in 15 minutes, or a ceiling per e-mail, per address or in total (Retry-After)',
          ],
          unavailable(BUSY_HASHER),
        ),
      },
      handler: async ({ body }, ctx) => {
        ctx.body = await services.auth.login(body, ctx.ip);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/auth/refresh',
      summary:
        'Exchange a refresh token for new tokens (the refresh token rotates; reuse revokes its family)',
      tags: ['Auth'],
      auth: 'public',
      ignoreBearer: true,
      body: refreshTokenBody,
      responses: {
        200: { description: 'New tokens', schema: tokenPairShape },
        ...errorResponses(
          400,
          [401, 'INVALID_TOKEN (unknown, used, revoked or not a refresh token), TOKEN_EXPIRED'],
          413,
          415,
          [429, 'TOO_MANY_REQUESTS: too many refreshes from this address or in total (Retry-After)'],
        ),
      },
      handler: async ({ body }, ctx) => {
        ctx.body = await services.auth.refresh(body.refreshToken, ctx.ip);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/auth/logout',
      summary: "Log out: revokes the presented refresh token's whole family",
      tags: ['Auth'],
      auth: 'public',
      ignoreBearer: true,
      body: refreshTokenBody,
      responses: {
        204: { description: 'Logged out (access tokens stay valid until they expire, at most 1 h)' },
        ...errorResponses(400, [401, 'INVALID_TOKEN, TOKEN_EXPIRED'], 413, 415),
      },
      handler: async ({ body }, ctx) => {
        await services.auth.logout(body.refreshToken);
        ctx.status = 204;
      },
    }),
  ];
}
