// GET/PATCH /members/me and the admin's GET /admin/members.
import { BUSY_HASHER, defineRoute, errorResponses, unavailable, type RouteDef } from '../lib/http/route';
import { pageEnvelope } from '../lib/http/pagination';
import { listMembersQuery, memberPageShape, memberShape, updateMeBody } from '../lib/members/member-schemas';
import type { Services } from '../lib/services';

export function memberRoutes(services: Pick<Services, 'members'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/members/me',
      summary: 'The caller’s own member data',
      tags: ['Members'],
      auth: 'any',
      responses: { 200: { description: 'The caller', schema: memberShape } },
      handler: async ({ auth }, ctx) => {
        ctx.body = await services.members.getMe(auth);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/members/me',
      summary:
        'Update the caller’s name, phone, business number (sellers) or password (needs currentPassword)',
      tags: ['Members'],
      auth: 'any',
      body: updateMeBody,
      responses: {
        200: {
          description:
            'The updated member; a password change revokes every refresh token and ends every access token issued before it: at once on the instance that answers, on the other instances of a cluster as soon as the change reaches them over NATS, and on processes that form no cluster within AUTH_MEMBER_CACHE_SECONDS',
          schema: memberShape,
        },
        ...errorResponses(
          [400, 'VALIDATION_ERROR (also a wrong currentPassword), BUSINESS_NUMBER_REQUIRED'],
          413,
          415,
          [
            429,
            'TOO_MANY_REQUESTS after LOGIN_FAILURE_LIMIT wrong currentPassword attempts for this member (default 5 in 15 minutes), from any address; failed logins do not count here (Retry-After)',
          ],
          unavailable(`${BUSY_HASHER} (a password change)`),
        ),
      },
      handler: async ({ auth, body }, ctx) => {
        ctx.body = await services.members.updateMe(auth, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/admin/members',
      summary: 'List members (newest first), filtered by role and a keyword in e-mail or name',
      tags: ['Members'],
      auth: ['ADMIN'],
      query: listMembersQuery,
      responses: {
        200: { description: 'A page of members', schema: memberPageShape },
        ...errorResponses(400, 403),
      },
      handler: async ({ query }, ctx) => {
        ctx.body = pageEnvelope(await services.members.list(query), query);
      },
    }),
  ];
}
