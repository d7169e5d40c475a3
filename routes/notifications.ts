import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import { pageEnvelope } from '../lib/http/pagination';
import { notificationListQuery, notificationPageShape } from '../lib/notifications/notification-schemas';
import type { Services } from '../lib/services';

export function notificationRoutes(services: Pick<Services, 'notifications'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/notifications',
      summary:
        "The caller's notifications (OrderCreated for sellers, OrderStatusChanged for buyers), newest first by cause: in the order the changes that caused them committed, whenever each was delivered; createdAt is the cause's time",
      tags: ['Notifications'],
      auth: 'any',
      query: notificationListQuery,
      responses: {
        200: { description: 'A page of notifications', schema: notificationPageShape },
        ...errorResponses(400),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = pageEnvelope(await services.notifications.listOwn(auth.id, query), query);
      },
    }),
  ];
}
